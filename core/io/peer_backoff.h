/*
 * peer_backoff.h - a circuit breaker per peer, kept by the fabric wrappers: a peer
 * whose op or RPC timed out or was refused is skipped for a backoff (doubling per
 * failure, from store.peer_backoff_ms up to store.peer_backoff_max_ms, reset by any
 * success), so its keys fail at once, with the error that put it there (refused,
 * timed out, reset), instead of every batch waiting the timeout again. When the
 * backoff ends, the next batch tries the peer again (it waits one timeout at most if
 * the peer is still sick).
 *
 * Not for: deciding membership. A skipped peer stays in the ring; its keys are
 * misses counted as unreachable until it answers again.
 */
#ifndef PC_PEER_BACKOFF_H
#define PC_PEER_BACKOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_fabric.h>

/* Per-peer state for f's nr_peers peers, or NULL on ENOMEM. base_ms 0: never skip. */
struct pc_fabric_peers *peer_backoff_create(uint32_t nr_peers, uint32_t base_ms, uint32_t max_ms);
void peer_backoff_destroy(struct pc_fabric_peers *p);

/* 0, or the -errno an op or RPC to peer fails with at once because the peer is
 * being skipped at time now_ns (the sickness that last opened its backoff). */
int peer_backoff_skips(const struct pc_fabric_peers *p, uint32_t peer, uint64_t now_ns);

/* Whether the last op or RPC to peer failed to reach it (and nothing has answered
 * since): what the metrics call a peer that is down. */
bool peer_backoff_down(const struct pc_fabric_peers *p, uint32_t peer);

/* Whether any peer is failing now: while none is, a batch that went well needs no
 * per-op look at the breaker. */
bool peer_backoff_any(const struct pc_fabric_peers *p);

/* Whether a status says the peer itself is sick (timed out, refused, reset,
 * unreachable), as opposed to an answer about one key or region. */
bool peer_backoff_is_sick(int status);

/* What an op or RPC to peer ended with: a sick status opens (or extends) the
 * peer's backoff, anything else closes it. Logs a warning when a peer starts being
 * skipped and when it answers again: one line per transition. */
void peer_backoff_note(struct pc_fabric_peers *p, const struct pc_fabric *f, uint32_t peer,
		       int status, uint64_t now_ns);

#endif
