/*
 * expose.c - a store's counters in the Prometheus text exposition format (0.0.4):
 * what this process asked as a client (pc_metrics, batch latency histograms, the
 * fabric's client counters, peers it could not reach) and what this node served
 * (one-sided ops by kind, refusals by reason, RPCs by type, connections, slot
 * occupancy per size class, spill and tier state, p2p pool and directory,
 * membership). Every sample carries the node label; names, types and units are
 * listed in docs/observability.md.
 *
 * Not for: serving HTTP (backends/http/metrics_http.c) or keeping the counters
 * (each is kept where the event happens, with relaxed atomics).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/sized.h"
#include "config/topology.h"
#include "io/peer_backoff.h"
#include "store.h"

#define OCC_MAX_AGE_NS 1000000000ULL	/* recount slots at most once a second */

struct out {
	struct pc_msg *m;
	const char *node;
	int err;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->err)
		return;
	for (int tries = 0; tries < 2; tries++) {
		size_t room = o->m->cap - o->m->len;

		va_start(ap, fmt);
		n = vsnprintf((char *)o->m->data + o->m->len, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			o->m->len += (size_t)n;
			return;
		}
		if (pc_msg_reserve(o->m, (size_t)n + 1)) {
			o->err = -ENOMEM;
			return;
		}
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample; labels is "" or "key=\"value\"[,...]". */
static void sample(struct out *o, const char *name, const char *labels, uint64_t v)
{
	put(o, "%s{node=\"%s\"%s%s} %" PRIu64 "\n", name, o->node, *labels ? "," : "", labels, v);
}

static void one(struct out *o, const char *name, const char *type, const char *help, uint64_t v)
{
	family(o, name, type, help);
	sample(o, name, "", v);
}

/* A family with one label over n values. */
static void labelled(struct out *o, const char *name, const char *type, const char *help,
		     const char *label, const char *const *values, const uint64_t *v, size_t n)
{
	char l[96];

	family(o, name, type, help);
	for (size_t i = 0; i < n; i++) {
		snprintf(l, sizeof(l), "%s=\"%s\"", label, values[i]);
		sample(o, name, l, v[i]);
	}
}

/* ------------------------------------------------------------------ client side */

static void client_counters(struct out *o, struct pc_store *st)
{
	static const char *const miss_reasons[] = { "absent", "other_key", "torn", "length",
						    "checksum", "unreachable" };
	static const char *const spill_events[] = { "demoted", "promoted", "corrupt", "failed",
						    "dropped", "stale" };
	struct pc_metrics m;

	store_metrics(st, &m);
	one(o, "peercache_pages_written_total", "counter", "Pages this process stored.",
	    m.write_requests);
	one(o, "peercache_written_bytes_total", "counter", "Payload bytes of the pages stored.",
	    m.bytes_written);
	one(o, "peercache_write_failures_total", "counter",
	    "Pages not stored: owner unreachable, bucket read failed, slot claim lost or bucket full.",
	    m.write_failures);
	one(o, "peercache_evictions_total", "counter", "Stores that displaced another key's page.",
	    m.evictions);
	one(o, "peercache_oversize_pages_total", "counter",
	    "Pages larger than the largest size class, skipped.", m.skipped_oversize);
	one(o, "peercache_read_requests_total", "counter", "Pages asked for by batch get.",
	    m.read_requests);
	one(o, "peercache_hits_total", "counter", "Pages batch get returned.", m.hits);
	one(o, "peercache_hit_bytes_total", "counter", "Payload bytes returned to callers.",
	    m.hit_bytes);
	one(o, "peercache_read_bytes_total", "counter",
	    "Bytes the reads moved: index, headers and payloads.", m.bytes_read);
	one(o, "peercache_first_phase_hits_total", "counter", "Hits found by the first read phase.",
	    m.first_phase_hits);
	labelled(o, "peercache_misses_total", "counter", "Gets that missed, by reason.", "reason",
		 miss_reasons, &m.miss_absent, 6);
	one(o, "peercache_exists_requests_total", "counter", "Pages asked about by batch exists.",
	    m.exists_requests);
	one(o, "peercache_exists_hits_total", "counter", "Pages batch exists found.", m.exists_hits);
	one(o, "peercache_batches_total", "counter", "Batch calls.", m.batches);
	one(o, "peercache_round_trips_total", "counter", "Network phases the batches issued.",
	    m.round_trips);
	one(o, "peercache_layout_fetches_total", "counter", "Slot-layout RPCs sent.",
	    m.layout_fetches);
	one(o, "peercache_disk_hits_total", "counter", "Hits an owner promoted from its disk.",
	    m.disk_hits);
	one(o, "peercache_promote_rpcs_total", "counter", "Owners asked about misses.",
	    m.promote_rpcs);
	labelled(o, "peercache_spill_pages_total", "counter",
		 "This node's slot pages moved to or from its disk, by event.", "event",
		 spill_events, &m.spill_demoted, 6);
	one(o, "peercache_pool_pages", "gauge", "Pages in this node's published p2p pool.",
	    m.pool_keys);
	one(o, "peercache_directory_entries", "gauge", "Entries in this node's p2p directory shard.",
	    m.dir_entries);
	one(o, "peercache_remote_touches_total", "counter",
	    "Own p2p pages other nodes read (moved up the LRU).", m.remote_touches);
	one(o, "peercache_orphans_freed_total", "counter",
	    "Own p2p pages another node's publication replaced.", m.orphans_freed);
	one(o, "peercache_rpc_refused_total", "counter",
	    "Requests refused because the caller may not send them (a node's, from a client).",
	    m.rpc_refused);
	one(o, "peercache_directory_refused_total", "counter",
	    "p2p directory puts refused over a publisher's bound.", m.dir_refused);
	one(o, "peercache_claims_taken_over_total", "counter",
	    "Slot claims left unwritten past the claim timeout, taken over.", m.claims_taken_over);
	one(o, "peercache_promote_failures_total", "counter",
	    "Promote RPCs that failed or came back malformed (their misses stand).",
	    m.promote_failures);
	one(o, "peercache_spill_read_errors_total", "counter",
	    "Disk copies of spilled pages that could not be read back.", m.spill_read_errors);
}

static void latency(struct out *o, struct pc_store *st)
{
	static const char *const ops[] = { "get", "set", "exists" };
	static const char *name = "peercache_batch_duration_seconds";

	family(o, name, "histogram", "Duration of batch calls, by op.");
	for (int op = 0; op < STORE_NR_BATCH_OPS; op++) {
		struct latency_hist h;
		uint64_t n = latency_snapshot(&st->lat[op], &h), cum = 0;

		for (unsigned k = 0; k < LAT_BUCKETS; k++) {
			cum += h.bucket[k];
			/* %.8g: a bound is 2^k us, up to 16.777216 s, eight digits; %g's six
			 * would round the bounds from 2^20 us on and misplace the samples
			 * between the rounded label and the real bound. */
			if (k < LAT_BUCKETS - 1)
				put(o, "%s_bucket{node=\"%s\",op=\"%s\",le=\"%.8g\"} %" PRIu64 "\n", name,
				    o->node, ops[op], latency_bound_s(k), cum);
			else
				put(o, "%s_bucket{node=\"%s\",op=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
				    name, o->node, ops[op], cum);
		}
		put(o, "%s_sum{node=\"%s\",op=\"%s\"} %.9f\n", name, o->node, ops[op],
		    (double)h.sum_ns * 1e-9);
		put(o, "%s_count{node=\"%s\",op=\"%s\"} %" PRIu64 "\n", name, o->node, ops[op], n);
	}
}

/* RDMA fabrics' own client counters: every fabric prints them (0 where nothing is
 * staged or railed), so one dashboard serves tcp and RoCE clusters alike. */
static void rdma_client(struct out *o, struct pc_store *st, const struct pc_fabric_stats *f)
{
	const struct pc_topology *t = st->svc.topo;
	uint32_t rails = st->svc.self != PC_PEER_NONE ? t->nodes[st->svc.self].nr_rails : 1;
	char l[32];

	family(o, "peercache_fabric_rail_bytes_total", "counter",
	       "Bytes the completed one-sided ops moved over each of this process's rails (RDMA).");
	for (uint32_t r = 0; r < rails && r < PC_FABRIC_MAX_RAILS; r++) {
		snprintf(l, sizeof(l), "rail=\"%u\"", r);
		sample(o, "peercache_fabric_rail_bytes_total", l, f->rail_bytes[r]);
	}
	one(o, "peercache_fabric_bounce_copies_total", "counter",
	    "Ops whose local bytes were copied through a staging buffer: not in registered memory.",
	    f->bounce_copies);
	one(o, "peercache_fabric_bounce_bytes_total", "counter", "Bytes those copies moved.",
	    f->bounce_bytes);
	one(o, "peercache_fabric_qp_errors_total", "counter",
	    "Queue pairs torn down after a failed op; rebuilt on the next use (RDMA).", f->qp_errors);
	one(o, "peercache_fabric_qp_timeouts_total", "counter",
	    "Ops failed by exceeded transport or RNR retries (RDMA).", f->qp_timeouts);
	one(o, "peercache_fabric_rail_changes_total", "counter",
	    "Rails seen going down or coming back (RDMA port events).", f->rail_changes);
}

static void fabric_client(struct out *o, struct pc_store *st, const struct pc_fabric_stats *f)
{
	static const char *const kinds[] = { "read", "write", "cas" };
	const struct pc_topology *t = st->svc.topo;
	uint64_t ops[] = { f->ops_read, f->ops_write, f->ops_cas };
	uint64_t bytes[] = { f->bytes_read, f->bytes_written };
	char l[96];

	labelled(o, "peercache_fabric_ops_total", "counter",
		 "One-sided ops this process completed on peers, by kind.", "op", kinds, ops, 3);
	labelled(o, "peercache_fabric_bytes_total", "counter",
		 "Bytes this process's one-sided ops moved, by kind.", "op", kinds, bytes, 2);
	one(o, "peercache_fabric_op_errors_total", "counter", "One-sided ops that failed.",
	    f->op_errors);
	one(o, "peercache_fabric_rpcs_total", "counter", "RPCs this process sent.", f->rpcs);
	one(o, "peercache_fabric_connects_total", "counter", "Connections this process opened.",
	    f->reconnects);
	rdma_client(o, st, f);
	one(o, "peercache_fabric_skipped_ops_total", "counter",
	    "One-sided ops failed at once: their peer was backing off.", f->skipped_ops);
	one(o, "peercache_fabric_skipped_rpcs_total", "counter",
	    "RPCs failed at once: their peer was backing off.", f->skipped_rpcs);
	family(o, "peercache_peer_up", "gauge",
	       "0 while the ops and RPCs this process sent to the peer fail to reach it, else 1.");
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		if (i == st->svc.self || !pc_node_listed(&t->nodes[i]))
			continue;
		snprintf(l, sizeof(l), "peer=\"%s\"", t->nodes[i].name);
		sample(o, "peercache_peer_up", l, !peer_backoff_down(st->svc.fabric->peers, i));
	}
}

/* ------------------------------------------------------------------ serving side */

static const char *const rpc_names[PROTO_NR_RPCS] = {
	[0] = "unknown",
	[PC_RPC_LAYOUT] = "layout",
	[PC_RPC_TIER_OFFER] = "tier_offer",
	[PC_RPC_TIER_QUERY] = "tier_query",
	[PC_RPC_TIER_PUT] = "tier_put",
	[PC_RPC_TIER_FETCH] = "tier_fetch",
	[PC_RPC_TIER_RELEASE] = "tier_release",
	[PC_RPC_TIER_STATS] = "tier_stats",
	[PC_RPC_SLOT_PROMOTE] = "slot_promote",
	[PC_RPC_DIR_UPDATE] = "dir_update",
	[PC_RPC_DIR_GET] = "dir_get",
	[PC_RPC_MEMBER] = "member",
	[PC_RPC_P2P_TOUCH] = "p2p_touch",
	[PC_RPC_HEARTBEAT] = "heartbeat",
	[PC_RPC_JOIN] = "join",
};

static void served(struct out *o, struct pc_store *st, const struct pc_fabric_stats *f)
{
	static const char *const kinds[] = { "read", "write", "cas" };
	static const char *const reasons[] = { "key", "bounds", "rights", "malformed" };
	uint64_t ops[] = { f->served_reads, f->served_writes, f->served_cas };
	uint64_t bytes[] = { f->served_read_bytes, f->served_write_bytes, f->served_cas_bytes };
	uint64_t refused[] = { f->refused_key, f->refused_bounds, f->refused_rights,
			       f->refused_malformed };
	uint64_t rpcs[PROTO_NR_RPCS], fails[PROTO_NR_RPCS];
	uint64_t acc = f->conns_accepted, closed = f->conns_closed;

	labelled(o, "peercache_served_ops_total", "counter",
		 "One-sided ops this node executed for peers, by kind (software fabrics only).", "op",
		 kinds, ops, 3);
	labelled(o, "peercache_served_bytes_total", "counter",
		 "Bytes the one-sided ops this node served moved, by kind.", "op", kinds, bytes, 3);
	labelled(o, "peercache_refused_ops_total", "counter",
		 "One-sided ops this node refused, by reason.", "reason", reasons, refused, 4);
	one(o, "peercache_bad_frames_total", "counter",
	    "Malformed frames; each closed its connection.", f->bad_frames);
	{
		static const char *const why[] = { "auth", "connections", "idle", "oversize",
						    "buffered", "accept_backoff" };
		uint64_t n[] = { f->auth_refused, f->conns_refused, f->idle_closed,
				 f->oversize_refused, f->buffer_refused, f->accept_backoffs };

		labelled(o, "peercache_peer_limits_total", "counter",
			 "Peers refused or cut off by this node, by reason (docs/security.md).",
			 "reason", why, n, 6);
	}
	labelled(o, "peercache_skipped_total", "counter",
		 "Ops and RPCs failed at once because their peer was backing off.", "what",
		 (const char *const[]){ "ops", "rpcs" },
		 (uint64_t[]){ f->skipped_ops, f->skipped_rpcs }, 2);
	for (int i = 0; i < PROTO_NR_RPCS; i++) {
		rpcs[i] = __atomic_load_n(&st->rpc_served[i], __ATOMIC_RELAXED);
		fails[i] = __atomic_load_n(&st->rpc_failed[i], __ATOMIC_RELAXED);
	}
	labelled(o, "peercache_served_rpcs_total", "counter",
		 "Requests peers sent this node, by type.", "type", rpc_names, rpcs, PROTO_NR_RPCS);
	labelled(o, "peercache_served_rpc_errors_total", "counter",
		 "Requests this node answered with an error, by type.", "type", rpc_names, fails,
		 PROTO_NR_RPCS);
	one(o, "peercache_connections_accepted_total", "counter",
	    "Connections peers opened to this node.", acc);
	one(o, "peercache_connections_closed_total", "counter",
	    "Connections to this node that closed.", closed);
	one(o, "peercache_connections_open", "gauge", "Connections to this node open now.",
	    acc >= closed ? acc - closed : 0);
}

/* The occupancy snapshot, recounted when older than OCC_MAX_AGE_NS: a recount reads
 * every slot header, which a scrape every second must not turn into a busy core. */
static void occupancy_now(struct pc_store *st, struct store_occupancy *occ)
{
	uint64_t now = pc_env_now(st->svc.env);

	pthread_mutex_lock(&st->occ_lock);
	if (!st->occ_at_ns || now - st->occ_at_ns >= OCC_MAX_AGE_NS) {
		st->mode_ops->occupancy(st->mode, &st->occ);
		st->occ_at_ns = now ? now : 1;
	}
	*occ = st->occ;
	pthread_mutex_unlock(&st->occ_lock);
}

static void occupancy(struct out *o, struct pc_store *st)
{
	static const char *const help[] = {
		"Slots of this node, by size class.",
		"Slots holding a page, by size class.",
		"Payload bytes stored in the slots, by size class.",
		"Slots with a write in progress, by size class.",
	};
	static const char *const names[] = {
		"peercache_slots", "peercache_slots_used", "peercache_slot_stored_bytes",
		"peercache_slot_claims_in_flight",
	};
	struct store_occupancy occ;
	char l[64];

	occupancy_now(st, &occ);
	for (int f = 0; f < 4; f++) {
		family(o, names[f], "gauge", help[f]);
		for (uint32_t c = 0; c < occ.nr_classes; c++) {
			const struct store_class_use *u = &occ.cls[c];
			uint64_t v[] = { u->slots, u->used, u->stored_bytes, u->claims };

			snprintf(l, sizeof(l), "class=\"%" PRIu64 "\"", u->page_bytes);
			sample(o, names[f], l, v[f]);
		}
	}
}

static void tier(struct out *o, struct pc_store *st)
{
	static const char *const where[] = { "host", "disk" };
	static const char *const events[] = { "evicted", "demoted", "promoted", "dropped",
					      "disk_dropped", "corrupt", "spill_failed",
					      "lease_expired" };
	struct pc_tier_metrics m = { .size = sizeof(m) };
	uint64_t blocks[2], cap[2];

	if (pc_tier_metrics(st, &m))
		return;
	blocks[0] = m.resident_committed_blocks;
	blocks[1] = m.resident_disk_blocks;
	cap[0] = m.host_blocks;
	cap[1] = m.disk_blocks;
	labelled(o, "peercache_tier_blocks", "gauge", "Blocks held by the tiered pool, by tier.",
		 "tier", where, blocks, 2);
	labelled(o, "peercache_tier_capacity_blocks", "gauge",
		 "Blocks the tiered pool can hold, by tier.", "tier", where, cap, 2);
	one(o, "peercache_tier_leased_blocks", "gauge", "Host blocks leased to readers now.",
	    m.leased_blocks);
	{
		uint64_t v[] = { m.evicted_blocks, m.demoted_blocks, m.promoted_blocks,
				 m.dropped_blocks, m.disk_dropped, m.corrupt_on_promote,
				 m.spill_failures, m.lease_expired };

		labelled(o, "peercache_tier_block_events_total", "counter",
			 "Tiered pool blocks by event (demote, promote, drop, corruption).", "event",
			 events, v, 8);
	}
	one(o, "peercache_tier_put_bytes_total", "counter", "Bytes committed by tier puts.",
	    m.put_bytes);
	one(o, "peercache_tier_fetch_blocks_total", "counter", "Blocks asked for by tier fetches.",
	    m.fetch_blocks);
	one(o, "peercache_tier_fetch_misses_total", "counter", "Tier fetch blocks that missed.",
	    m.fetch_miss);
}

static void membership(struct out *o, struct pc_store *st)
{
	unsigned pass = store_ring_enter(&st->svc);
	uint32_t members = store_ring(&st->svc)->nr_nodes;

	store_ring_exit(&st->svc, pass);
	one(o, "peercache_members", "gauge", "Nodes in this store's ring.", members);
	one(o, "peercache_topology_nodes", "gauge", "Nodes in the node table (listed or joined).",
	    topology_nr_listed(st->svc.topo));
	one(o, "peercache_membership_changes_total", "counter",
	    "Ring changes this store applied (its membership generation).",
	    __atomic_load_n(&st->member_changes, __ATOMIC_RELAXED));
}

int store_ready(struct pc_store *st, const char **why)
{
	struct store_svc *sv = &st->svc;

	if (sv->self == PC_PEER_NONE)
		return 0;
	if (!st->serving) {
		*why = "not serving";
		return -EAGAIN;
	}
	unsigned pass = store_ring_enter(sv);
	bool member = ring_contains(store_ring(sv), sv->self);

	store_ring_exit(sv, pass);
	if (!member) {
		*why = "not a member of the ring";
		return -ENOENT;
	}
	return 0;
}

int store_expose(struct pc_store *st, struct pc_msg *m)
{
	const char *name = pc_store_node(st), *why = NULL;
	struct out o = { .m = m, .node = name ? name : "client" };
	struct pc_fabric_stats f;

	if (pc_msg_reserve(m, 32768))
		return -ENOMEM;
	pc_fabric_get_stats(st->svc.fabric, &f);
	family(&o, "peercache_build_info", "gauge", "Library version, mode and fabric; always 1.");
	put(&o, "peercache_build_info{node=\"%s\",version=\"%s\",mode=\"%s\",fabric=\"%s\"} 1\n",
	    o.node, pc_version(), st->mode_ops->name, st->svc.fabric->ops->name);
	one(&o, "peercache_ready", "gauge", "1 when the store serves and is a member of its ring.",
	    store_ready(st, &why) == 0);
	client_counters(&o, st);
	latency(&o, st);
	fabric_client(&o, st, &f);
	if (st->svc.self != PC_PEER_NONE) {
		served(&o, st, &f);
		occupancy(&o, st);
		tier(&o, st);
	}
	membership(&o, st);
	return o.err;
}

int pc_store_served_metrics(struct pc_store *st, struct pc_served_metrics *out)
{
	struct pc_served_metrics m = { .size = sizeof(m) };
	struct store_occupancy occ;
	struct pc_fabric_stats f;

	if (!st)
		return -EINVAL;
	if (st->svc.self != PC_PEER_NONE) {
		pc_fabric_get_stats(st->svc.fabric, &f);
		m.reads = f.served_reads;
		m.writes = f.served_writes;
		m.cas = f.served_cas;
		m.read_bytes = f.served_read_bytes;
		m.write_bytes = f.served_write_bytes;
		m.cas_bytes = f.served_cas_bytes;
		m.refused_key = f.refused_key;
		m.refused_bounds = f.refused_bounds;
		m.refused_rights = f.refused_rights;
		m.refused_malformed = f.refused_malformed;
		m.bad_frames = f.bad_frames;
		m.conns_accepted = f.conns_accepted;
		m.conns_closed = f.conns_closed;
		for (int i = 0; i < PROTO_NR_RPCS; i++) {
			m.rpcs += __atomic_load_n(&st->rpc_served[i], __ATOMIC_RELAXED);
			m.rpc_errors += __atomic_load_n(&st->rpc_failed[i], __ATOMIC_RELAXED);
		}
		occupancy_now(st, &occ);
		for (uint32_t c = 0; c < occ.nr_classes; c++) {
			m.slots += occ.cls[c].slots;
			m.slots_used += occ.cls[c].used;
			m.slot_claims += occ.cls[c].claims;
			m.slot_stored_bytes += occ.cls[c].stored_bytes;
		}
	}
	unsigned pass = store_ring_enter(&st->svc);
	m.members = store_ring(&st->svc)->nr_nodes;
	store_ring_exit(&st->svc, pass);
	m.member_changes = __atomic_load_n(&st->member_changes, __ATOMIC_RELAXED);
	return sized_fill(out, &m, sizeof(m));
}

long pc_store_metrics_text(struct pc_store *st, char *buf, size_t cap)
{
	struct pc_msg m = { 0 };
	long ret;

	if (!st || (!buf && cap))
		return -EINVAL;
	ret = store_expose(st, &m);
	if (!ret) {
		ret = (long)m.len;
		if (cap) {
			size_t n = m.len < cap - 1 ? m.len : cap - 1;

			memcpy(buf, m.data, n);
			buf[n] = 0;
		}
	}
	pc_msg_free(&m);
	return ret;
}
