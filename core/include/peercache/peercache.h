/*
 * peercache.h - the API applications use: a distributed KV-cache page store.
 *
 * Serving processes publish fixed-size KV pages under byte-string keys; any node
 * reads any page back with as few network round trips as the mode allows.
 *
 * In order below: logging and the version; opening a store (struct pc_store_opts,
 * from a topology file, see pc_topology.h); batches of pages (struct pc_page:
 * pc_batch_set, pc_batch_get, pc_batch_exists, each page with its own status);
 * counters (struct pc_metrics, sized); registering page buffers for RDMA;
 * membership (pc_store_set_member); and the tiered pool of KVBM peers (pc_tier_*).
 *
 * Conventions: 0 (or a count) or a negative errno; structs the caller passes or
 * receives start with their size; nodes are named by their topology names; every
 * call is safe from many threads on one store unless it says otherwise.
 * docs/api.md is the overview, docs/design.md the architecture and invariants.
 */
#ifndef PEERCACHE_H
#define PEERCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_api.h>
#include <peercache/pc_version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ logging */

enum pc_log_level { PC_LOG_ERROR = 0, PC_LOG_WARN = 1, PC_LOG_INFO = 2, PC_LOG_DEBUG = 3 };

/* Receives every log line: one line, no trailing newline (control bytes, which a
 * peer may put in the names it sends, are replaced by '?'). May be called from any
 * thread. */
typedef void pc_log_sink(void *arg, enum pc_log_level level, const char *line);

/* Route log lines to sink (NULL restores the default: stderr). Not thread-safe:
 * call it before opening anything. */
PC_API void pc_log_set_sink(pc_log_sink *sink, void *arg);
/* Drop lines above level. The default is PC_LOG_INFO, or $PC_LOG_LEVEL
 * (error|warn|info|debug). */
PC_API void pc_log_set_level(enum pc_log_level level);

/* The library's version, "MAJOR.MINOR.PATCH": the one it was built as, which may
 * differ from the PC_VERSION_* of the header a program was compiled against. */
PC_API const char *pc_version(void);

/* ------------------------------------------------------------------ the store */

struct pc_store;
struct pc_topology;

/* How to open a store. Zero what you do not set; size must be sizeof(struct
 * pc_store_opts) of the header you compiled against, so that later versions can add
 * fields. */
struct pc_store_opts {
	uint32_t size;
	const char *topology;		/* path of the topology YAML, or NULL with topo */
	const struct pc_topology *topo;	/* an already loaded topology (copied) */
	const char *node;		/* the node this process is; NULL: a client that
					 * owns no slots and serves nothing */
	const char *fabric;		/* backend name ("tcp", "verbs", "rxe"); NULL: from
					 * the topology's store.protocol, with its fallback */
	const char *const *set;		/* NULL-terminated overrides applied to the
					 * topology first, as pc_topology_set() takes them
					 * ("store.slot_ways=8"); NULL: none */
	char *err;			/* receives a one-line error when open fails */
	size_t errlen;
};

/* Open a store: load the topology, take the node's slots (and serve them to peers)
 * or join as a client, and connect lazily to peers. 0 or -errno with opts->err set.
 * On success close it with pc_store_close(). */
PC_API int pc_store_open(const struct pc_store_opts *opts, struct pc_store **out);

/* Stop serving, release the node's slots and connections. Pages stored in this node's
 * slots are gone with it (this is a cache). No batch may be running. */
PC_API void pc_store_close(struct pc_store *s);

/*
 * One page of a batch. The caller owns every buffer; the store copies what it keeps.
 *
 *   set:    key, data (the page, not modified), len (its length).
 *   get:    key, data (where the page goes), cap (bytes data holds), len (in: the
 *           expected length, or 0 for any length up to cap; out: the page's length).
 *           Passing the expected length lets the store read exactly that many bytes.
 *   exists: key; len, when nonzero, names the size class to look in (else all).
 *
 * status (out): 0 stored / hit / present; -ENOENT not in the cache (a clean miss);
 * -EFBIG larger than the largest size class (skipped); -EINVAL bad arguments; any
 * other -errno: the owner could not be asked (down, timed out) and the page counts
 * as a miss. A get never fills data with another key's page, a torn page or a page
 * of another length than status and len say.
 *
 * A key names one page (a serving engine's keys are hashes of their content). A set
 * of a key in one size class leaves a copy in another class as it was: set a key
 * again with a length of another class and a get may return either page.
 */
struct pc_page {
	const void *key;
	size_t key_len;
	void *data;
	size_t len;
	size_t cap;
	int status;
};

/* The batch calls are safe from many threads at once on one store. Each returns the
 * number of pages with status 0, or -errno when the call itself failed (then no page
 * status is meaningful). A batch costs a fixed number of network round trips per
 * phase whatever its size: slotmap gets take one (two for pages not in the way this
 * node predicted or last saw them in, or in classes read index-first; three for a
 * page that moved from the way this node last saw it in), sets two. A
 * get's buffer holds the page on a hit only: on a miss its bytes are undefined (a
 * read may have landed there before the gate refused it). In p2p mode (store.mode)
 * a set writes into this node's published pool and tells the directory (one round
 * trip; a client store cannot publish: -EOPNOTSUPP; a set that loses a race with
 * another set of the same key on this node: -EBUSY; a set that fails leaves the key
 * absent), a get asks the directory and then reads (two), exists asks the directory
 * (one). */
PC_API int pc_batch_set(struct pc_store *s, struct pc_page *pages, size_t n);
PC_API int pc_batch_get(struct pc_store *s, struct pc_page *pages, size_t n);
PC_API int pc_batch_exists(struct pc_store *s, struct pc_page *pages, size_t n);

/* Counters since open. In slotmap mode pool_keys and dir_entries stay 0 (no
 * published pool, no directory), by design. size first: set it to sizeof(struct
 * pc_metrics) before asking; the library fills what that size holds, so a program
 * built against an older header keeps working when counters are added. */
struct pc_metrics {
	uint32_t size;
	uint32_t reserved;
	/* writes */
	uint64_t write_requests;	/* pages stored */
	uint64_t bytes_written;		/* their payload bytes */
	uint64_t write_failures;	/* not stored: owner unreachable, bucket read failed,
					 * lost a slot claim, or the batch filled the bucket */
	uint64_t evictions;		/* stores that displaced another key's page */
	uint64_t skipped_oversize;	/* pages larger than the largest size class */
	/* reads */
	uint64_t read_requests;		/* pages asked for by pc_batch_get */
	uint64_t hits;
	uint64_t hit_bytes;		/* payload bytes returned to callers */
	uint64_t bytes_read;		/* bytes reads moved: index, headers, payloads */
	uint64_t first_phase_hits;	/* hits found by the first read phase */
	uint64_t miss_absent;		/* not in its bucket */
	uint64_t miss_other_key;	/* the slot the index pointed at held another key */
	uint64_t miss_torn;		/* a write was in progress */
	uint64_t miss_length;		/* not the expected length, or over the capacity */
	uint64_t miss_checksum;		/* payload failed its checksum (torn or corrupt) */
	uint64_t miss_unreachable;	/* owner down or timed out */
	uint64_t exists_requests;
	uint64_t exists_hits;
	/* batches */
	uint64_t batches;		/* batch calls */
	uint64_t round_trips;		/* network phases they issued */
	uint64_t layout_fetches;	/* slot-layout RPCs (once per peer and restart) */
	/* spill under slotmap (store.slot_spill_ways) */
	uint64_t disk_hits;		/* reader: hits the owner promoted from its disk */
	uint64_t promote_rpcs;		/* reader: owners asked about misses */
	uint64_t spill_demoted;		/* owner: pages moved from slots to disk */
	uint64_t spill_promoted;	/* owner: pages moved back into slots */
	uint64_t spill_corrupt;		/* owner: disk copies that failed their checksum */
	uint64_t spill_failures;	/* owner: demotions that failed (EIO, ENOSPC) */
	uint64_t spill_dropped;		/* owner: pages the full disk dropped (its LRU tail) */
	uint64_t spill_stale;		/* owner: disk copies dropped for a newer slot version */
	/* p2p mode (none of these in slotmap mode: no published pool, no directory) */
	uint64_t pool_keys;		/* pages in this node's published pool, now */
	uint64_t dir_entries;		/* entries in this node's directory shard, now */
	uint64_t remote_touches;	/* own pages other nodes read: moved up the LRU */
	uint64_t orphans_freed;		/* own pages another node's publication replaced */
	/* peers (docs/security.md) */
	uint64_t rpc_refused;		/* a node's requests a client sent: refused */
	uint64_t dir_refused;		/* p2p: directory puts over a publisher's bound */
	/* slot claims (store.slot_cas_claim) */
	uint64_t claims_taken_over;	/* claims a writer left unwritten past the claim
					 * timeout, taken over by this node's writers */
	/* faults under spill, each a clean miss */
	uint64_t promote_failures;	/* reader: promote RPCs that failed or came back
					 * malformed (their misses stand) */
	uint64_t spill_read_errors;	/* owner: disk copies that could not be read back */
};

/* 0, or -EINVAL when out->size cannot hold the size field itself. */
PC_API int pc_store_metrics(struct pc_store *s, struct pc_metrics *out);

/* What this node served its peers, and its slots now: the serving side that
 * pc_metrics (this process's own calls) does not show. One-sided op counters stay 0
 * on fabrics whose NIC serves the ops in hardware (verbs, rxe); a client serves
 * nothing. Slot counts are recounted at most once a second. size first, as in struct
 * pc_metrics. */
struct pc_served_metrics {
	uint32_t size;
	uint32_t reserved;
	uint64_t reads, writes, cas;		/* one-sided ops served */
	uint64_t read_bytes, write_bytes, cas_bytes;
	uint64_t refused_key, refused_bounds, refused_rights, refused_malformed;
	uint64_t bad_frames;			/* malformed frames (connection closed) */
	uint64_t rpcs, rpc_errors;		/* peers' requests, every type */
	uint64_t conns_accepted, conns_closed;
	uint64_t slots, slots_used, slot_claims, slot_stored_bytes;	/* all classes */
	uint64_t members;			/* nodes in this store's ring */
	uint64_t member_changes;		/* ring changes applied */
};

/* 0, or -EINVAL when out->size cannot hold the size field itself. */
PC_API int pc_store_served_metrics(struct pc_store *s, struct pc_served_metrics *out);

/* The store's counters as Prometheus text (exposition format 0.0.4; the names are
 * in docs/observability.md): what this process asked as a client, with batch latency
 * histograms, and for a node what it served, its slot occupancy, tiered pool and
 * membership. Writes at most cap bytes into buf, NUL-terminated when cap > 0, and
 * returns the length of the whole text as snprintf does (call with cap 0 to size
 * it), or -errno. Any thread; it reads counters without stopping the batches. */
PC_API long pc_store_metrics_text(struct pc_store *s, char *buf, size_t cap);

/*
 * An HTTP endpoint for scrapers, on a thread of its own (libmicrohttpd), never on
 * the fabric's: GET /metrics (the text above), /healthz (200 while the process
 * runs) and /readyz (200 when a store is attached, serving and a member of its
 * ring; else 503 with the reason). It binds host (NULL: 127.0.0.1) on port (0: an
 * ephemeral one, see pc_metrics_server_port). s may be NULL and attached later (a
 * daemon that is not ready yet); attach NULL before closing the store it serves.
 * 0 or -errno (-EADDRINUSE, -EADDRNOTAVAIL, -ENOMEM; -ENOTSUP from a library built
 * without the endpoint, PC_METRICS_HTTP=OFF).
 */
struct pc_metrics_server;

PC_API int pc_metrics_serve(struct pc_store *s, const char *host, uint16_t port,
			    struct pc_metrics_server **out);
/* The port it listens on. */
PC_API uint16_t pc_metrics_server_port(const struct pc_metrics_server *m);
/* Serve s from now on (NULL: none; /readyz answers 503 with why, or "no store"). Waits
 * for scrapes of the previous store to finish. */
PC_API void pc_metrics_server_attach(struct pc_metrics_server *m, struct pc_store *s,
				     const char *why);
/* Stop serving; in-flight requests finish first. */
PC_API void pc_metrics_server_close(struct pc_metrics_server *m);

/* Register memory the caller passes as page buffers (a host KV pool, a staging
 * area). Over RDMA, pages then move between the NIC and that memory directly instead
 * of through a registered bounce buffer; over tcp it changes nothing. The memory
 * must stay mapped until pc_store_unregister() or pc_store_close(). 0 or -errno. */
PC_API int pc_store_register(struct pc_store *s, void *buf, size_t len);
PC_API void pc_store_unregister(struct pc_store *s, void *buf);

/* The name of this store's node, or NULL for a client. */
PC_API const char *pc_store_node(const struct pc_store *s);

/*
 * Membership. A store starts with every node of its topology in its ring. When a
 * node dies or is drained (member false), or comes back (true), whoever watches the
 * cluster (a control plane, an operator, a serving engine's health check) calls this
 * on one store: it changes that store's ring and tells every other node of the
 * topology, which change theirs (a node leaving is not told). Client stores are not
 * told: each calls this itself (telling the nodes again changes nothing).
 *
 * In p2p mode the directory follows the ring: on a join, shards hand the entries the
 * newcomer now owns to it; on a leave, entries naming the departed node are dropped
 * and every node publishes again the entries of its own pages whose shard was the
 * departed node's, so every surviving page stays reachable. Slotmap moves nothing:
 * a departed node's pages are gone with it and its keys go to their new owners.
 *
 * 0, -ENXIO for a name not in the topology, or -errno. A node that could not be
 * told gets a warning line (it keeps its old ring until told again).
 */
PC_API int pc_store_set_member(struct pc_store *s, const char *node, bool member);

/*
 * Nodes also find out by themselves: each heartbeats every other node of the
 * topology every store.heartbeat_ms; a member silent for store.failure_timeout_ms
 * leaves the ring of every node that stops hearing it, and comes back when heard
 * again. A client store asks a node for its view every heartbeat and follows it. A
 * node that pc_store_set_member() took out stays out while it runs with the
 * incarnation it had (it comes back when it restarts, or is set member again).
 */
enum pc_member_state {
	PC_MEMBER_UP = 0,		/* in the ring */
	PC_MEMBER_DOWN = 1,		/* silent: out of the ring until heard again */
	PC_MEMBER_LEFT = 2,		/* taken out on purpose */
};

/* node's state as this store sees it, and its incarnation as last heard (0: never;
 * either pointer may be NULL). 0, or -ENXIO for a name not in the topology. */
PC_API int pc_store_member(const struct pc_store *s, const char *node,
			   enum pc_member_state *state, uint64_t *incarnation);

/* The generation of this store's view: it grows with every membership change the
 * store made or heard of (a Lamport clock: every node keeps the largest it hears). */
PC_API uint64_t pc_store_generation(const struct pc_store *s);

/* ------------------------------------------------------------------ tiered pools */

/*
 * A node whose topology sets store.tier_host_blocks also serves a tiered pool (the
 * KVBM G2PB peer): blocks named by 64-bit hashes (a sequence hash) in pinned host
 * memory, in access order, whose least recently used blocks slide down to a disk pool
 * (store.tier_disk_blocks, in an unlinked file in the node's nvme.path) and back up
 * when fetched, checksum-verified both ways. A client asks one node at a time:
 *
 *   offer:  which of these blocks does the node not hold yet (on host or disk)?
 *   put:    the node pulls the blocks from this store's staging memory with one-sided
 *           READs, verifies each checksum and commits it (stage_put);
 *   fetch:  the node promotes disk-resident blocks, leases them all, and this store
 *           reads them one-sided into the caller's buffers, verifies, releases.
 *
 * A block that cannot be had (never stored, dropped, corrupt on disk) is a clean
 * miss (-ENOENT); bytes that fail their checksum are never returned as a hit. node
 * is a node's name; one not in the topology gives -ENXIO. A NULL store or node, or
 * a NULL array where n is not 0 (the hashes, blocks or answers), gives -EINVAL.
 */
enum pc_where { PC_WHERE_NONE = 0, PC_WHERE_HOST = 1, PC_WHERE_DISK = 2 };

struct pc_block {
	uint64_t hash;
	void *data;		/* put: the bytes; fetch: where they go */
	size_t len;		/* put: their length; fetch: in: expected (0: any up to
				 * cap), out: the block's length */
	size_t cap;		/* fetch: bytes data holds */
	int status;		/* out: 0; -ENOENT a miss; -EFBIG over the block size;
				 * -ENOSPC the node's pool is full of leased blocks;
				 * -EBADMSG bytes failed their checksum; other -errno:
				 * the node could not be reached */
};

/* Which blocks node does not hold: wanted[i] true. Returns how many, or -errno. */
PC_API int pc_tier_offer(struct pc_store *s, const char *node, const uint64_t *hashes, size_t n,
			 bool *wanted);
/* Where each block is on node (enum pc_where). Returns how many it holds, or -errno. */
PC_API int pc_tier_query(struct pc_store *s, const char *node, const uint64_t *hashes, size_t n,
			 uint8_t *where);
/* Store blocks on node (those it holds already count as stored). This store must be
 * a node (peers pull from nodes they can address). Returns how many are stored. */
PC_API int pc_tier_put(struct pc_store *s, const char *node, struct pc_block *blocks, size_t n);
/* Read blocks back from node. Returns the number of hits. */
PC_API int pc_tier_fetch(struct pc_store *s, const char *node, struct pc_block *blocks, size_t n);

/* This node's tiered pool, in the vocabulary of its log lines. size first, as in
 * struct pc_metrics. */
struct pc_tier_metrics {
	uint32_t size;
	uint32_t reserved;
	uint64_t offers, offered_blocks, offered_new;
	uint64_t puts, put_blocks, put_bytes, put_duplicates, put_bad_checksum, put_failures;
	uint64_t fetches, fetch_blocks, fetch_host, fetch_disk, fetch_miss;
	uint64_t evicted_blocks;	/* left host memory to make room */
	uint64_t demoted_blocks;	/* ... with a copy on disk */
	uint64_t demote_batches, demote_ns;
	uint64_t background_demoted;	/* demoted by the free-block watermark */
	uint64_t promoted_blocks, promote_batches, promote_ns;
	uint64_t dropped_blocks;	/* left host memory with no disk copy */
	uint64_t disk_dropped;		/* the disk pool's own LRU tail, gone */
	uint64_t corrupt_on_promote;	/* disk copies that failed their checksum */
	uint64_t spill_failures;	/* demotions that failed (EIO, ENOSPC): dropped */
	uint64_t leases, lease_expired;
	uint64_t checksum_ns, disk_io_ns;
	/* now */
	uint32_t host_blocks, disk_blocks;
	uint32_t resident_committed_blocks;	/* on host */
	uint32_t resident_disk_blocks;
	uint32_t free_host_blocks, leased_blocks;
};

/* -ENOENT when this store serves no tiered pool. */
PC_API int pc_tier_metrics(struct pc_store *s, struct pc_tier_metrics *out);
/* The same, of another node, asked over the network. A node of another build
 * answers with its own struct: the counters both builds know are filled, the
 * others are 0. */
PC_API int pc_tier_node_metrics(struct pc_store *s, const char *node, struct pc_tier_metrics *out);

#ifdef __cplusplus
}
#endif
#endif
