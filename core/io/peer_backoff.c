/*
 * peer_backoff.c - the per-peer circuit breaker of the fabric wrappers (see
 * peer_backoff.h). State is a few words per peer, read and written with relaxed
 * atomics: two batches noting the same peer at once may both double its backoff,
 * which only makes the skip longer, never wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/topology.h"
#include "io/peer_backoff.h"

struct peer_state {
	uint64_t skip_until_ns;		/* skipped while now is before this */
	uint64_t backoff_ns;		/* the last backoff; 0: healthy */
	uint64_t failures;		/* sick outcomes in a row */
	int status;			/* the last of them */
};

struct pc_fabric_peers {
	uint64_t base_ns, max_ns;
	uint32_t nr;
	uint32_t nr_sick;		/* peers whose failures are not 0 (atomics) */
	struct peer_state s[];
};

struct pc_fabric_peers *peer_backoff_create(uint32_t nr_peers, uint32_t base_ms, uint32_t max_ms)
{
	struct pc_fabric_peers *p = calloc(1, sizeof(*p) + (size_t)nr_peers * sizeof(p->s[0]));

	if (!p)
		return NULL;
	p->nr = nr_peers;
	p->base_ns = (uint64_t)base_ms * 1000000;
	p->max_ns = (uint64_t)(max_ms > base_ms ? max_ms : base_ms) * 1000000;
	return p;
}

void peer_backoff_destroy(struct pc_fabric_peers *p)
{
	free(p);
}

int peer_backoff_skips(const struct pc_fabric_peers *p, uint32_t peer, uint64_t now_ns)
{
	int status;

	if (!p || !p->base_ns || peer >= p->nr ||
	    now_ns >= __atomic_load_n(&p->s[peer].skip_until_ns, __ATOMIC_RELAXED))
		return 0;
	status = __atomic_load_n(&p->s[peer].status, __ATOMIC_RELAXED);
	return status ? status : -EHOSTDOWN;
}

bool peer_backoff_any(const struct pc_fabric_peers *p)
{
	return p && __atomic_load_n(&p->nr_sick, __ATOMIC_RELAXED);
}

bool peer_backoff_down(const struct pc_fabric_peers *p, uint32_t peer)
{
	return p && peer < p->nr && __atomic_load_n(&p->s[peer].failures, __ATOMIC_RELAXED) != 0;
}

bool peer_backoff_is_sick(int status)
{
	switch (-status) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case EPIPE:
		return true;
	default:
		return false;
	}
}

static const char *peer_name(const struct pc_fabric *f, uint32_t peer, char *buf, size_t len)
{
	if (peer < f->topo->nr_nodes) {
		const struct pc_node *n = &f->topo->nodes[peer];

		snprintf(buf, len, "%s (%s:%u)", n->name, n->address, n->port);
	} else {
		snprintf(buf, len, "peer %u", peer);
	}
	return buf;
}

void peer_backoff_note(struct pc_fabric_peers *p, const struct pc_fabric *f, uint32_t peer,
		       int status, uint64_t now_ns)
{
	struct peer_state *s;
	char name[160];
	uint64_t b;

	if (!p || !p->base_ns || peer >= p->nr)
		return;
	s = &p->s[peer];
	if (!peer_backoff_is_sick(status)) {
		/* the common case reads only: no write to a line every thread shares */
		uint64_t failures = __atomic_load_n(&s->failures, __ATOMIC_RELAXED) ?
					    __atomic_exchange_n(&s->failures, 0, __ATOMIC_RELAXED) : 0;

		if (failures) {
			__atomic_fetch_sub(&p->nr_sick, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&s->backoff_ns, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->skip_until_ns, 0, __ATOMIC_RELAXED);
			pc_warn("peer %s answers again after %llu failed tries",
			       peer_name(f, peer, name, sizeof(name)), (unsigned long long)failures);
		}
		return;
	}
	/* one doubling per batch: ops of a batch to a skipped peer never reach here */
	if (now_ns < __atomic_load_n(&s->skip_until_ns, __ATOMIC_RELAXED))
		return;
	b = __atomic_load_n(&s->backoff_ns, __ATOMIC_RELAXED);
	b = b ? (b * 2 < p->max_ns ? b * 2 : p->max_ns) : p->base_ns;
	__atomic_store_n(&s->backoff_ns, b, __ATOMIC_RELAXED);
	__atomic_store_n(&s->status, status, __ATOMIC_RELAXED);
	__atomic_store_n(&s->skip_until_ns, now_ns + b, __ATOMIC_RELAXED);
	if (__atomic_fetch_add(&s->failures, 1, __ATOMIC_RELAXED) == 0) {
		__atomic_fetch_add(&p->nr_sick, 1, __ATOMIC_RELAXED);
		pc_warn("peer %s: %s; skipping it for %llu ms, then up to %llu ms while it fails",
			peer_name(f, peer, name, sizeof(name)), strerror(-status),
			(unsigned long long)(b / 1000000), (unsigned long long)(p->max_ns / 1000000));
	}
}
