/*
 * member.c - membership: which nodes are in the ring, kept by heartbeats.
 *
 * Every node sends PC_RPC_HEARTBEAT to every other node of its topology each
 * store.heartbeat_ms, with a deadline of one heartbeat, and notes whom it heard (a
 * heartbeat, or the answer to its own) and when. A member silent for
 * store.failure_timeout_ms leaves this node's ring; a node heard again comes back.
 * Each node decides alone, so detection has no single point of failure once the
 * nodes are up. Hearing a peer also ends its backoff (io/peer_backoff.h), so a peer
 * that comes back is used again at once.
 *
 * Clients serve nothing, so nobody heartbeats them: each heartbeat they ask one node
 * for its view (the same node while it answers, the next one when it does not) and
 * take its memberships.
 *
 * A node that leaves on purpose (pc_store_set_member(self, false): pcd on SIGTERM,
 * pcctl drain) tells the others, which keep it out while it runs with that
 * incarnation; it comes back when it restarts (a new incarnation) or is told to
 * join. The generation is a Lamport clock over changes of the view (a node in or out
 * of the ring, a new incarnation heard): each adds one, heartbeats carry it,
 * everyone keeps the largest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/topology.h"
#include "io/peer_backoff.h"
#include "member.h"
#include "member_registry.h"
#include "proto.h"
#include "store.h"

#define SLICE_NS 10000000ULL		/* the task looks at its stop flag this often */

struct member_peer {
	uint64_t heard_ns;		/* last heard (relaxed atomics); 0: never */
	uint64_t incarnation;		/* as last heard */
	uint64_t left_inc;		/* with left: the incarnation it left at (0: the
					 * first one heard after) */
	bool left;			/* left on purpose (written under the store's member_lock,
					 * atomically: state_of reads it without) */
	bool conflict;			/* another name claimed this entry (warned) */
	bool gone;			/* store.discovery etcd: no live record */
	bool live_record;		/* ... and had one at the last listing */
};

struct members {
	struct pc_store *st;
	uint32_t nr;
	struct member_peer *p;
	uint64_t generation;		/* atomics */
	uint64_t opened_ns;
	uint64_t heartbeat_ns, failure_ns;
	uint32_t ask;			/* client: the node it pulls the view from */
	uint64_t ask_generation;	/* ... and the generation it last took from it */
	struct pc_task *task;
	int stop;
	pthread_mutex_t table_lock;	/* fills vacant entries of the node table (a
					 * leaf lock: the event thread takes it) */
	/* store.discovery etcd: the registry instead of heartbeats */
	const struct registry_ops *reg_ops;
	void *reg;
	pthread_mutex_t reg_lock;	/* one call at a time (the task, a leave) */
	bool reg_left;			/* this node left on purpose: no lease */
	bool reg_warned;		/* unreachable, said once */
	uint32_t reg_fails;
	uint64_t reg_retry_at, reg_ok_since, reg_listed_at;
};

static const char *node_name(const struct members *m, uint32_t i)
{
	return m->st->svc.topo->nodes[i].name;
}

/* A generation no cluster reaches (one a change of the view): a peer that claims one
 * is not believed, so nobody can push the clock to where it wraps. */
#define GENERATION_MAX (1ULL << 62)

static void generation_at_least(struct members *m, uint64_t g)
{
	uint64_t cur = __atomic_load_n(&m->generation, __ATOMIC_RELAXED);

	if (g > GENERATION_MAX)
		return;

	while (cur < g && !__atomic_compare_exchange_n(&m->generation, &cur, g, true,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Heard node i: a new incarnation (a first one, or a restart) changes the view. */
static void heard(struct members *m, uint32_t i, uint64_t incarnation, uint64_t now)
{
	struct pc_fabric *f = m->st->svc.fabric;

	if (__atomic_exchange_n(&m->p[i].incarnation, incarnation, __ATOMIC_RELAXED) != incarnation)
		__atomic_fetch_add(&m->generation, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&m->p[i].heard_ns, now, __ATOMIC_RELAXED);
	peer_backoff_note(f->peers, f, i, 0, now);
}

/* ------------------------------------------------------------------ the table */

int members_learn(struct members *m, uint32_t i, const char *name, size_t name_cap,
		  const char *address, size_t address_cap, uint16_t port)
{
	struct pc_topology *t = m->st->svc.topo;
	char nm[PC_NAME_MAX], ad[PC_NAME_MAX];
	int ret = 0;

	snprintf(nm, sizeof(nm), "%.*s", (int)strnlen(name, name_cap), name);
	snprintf(ad, sizeof(ad), "%.*s", (int)strnlen(address, address_cap), address);
	if (i >= m->nr)
		return -EPROTO;
	if (pc_node_listed(&t->nodes[i])) {
		if (!strcmp(t->nodes[i].name, nm))
			return 0;
		if (!__atomic_exchange_n(&m->p[i].conflict, true, __ATOMIC_RELAXED))
			pc_warn("entry %u of the node table is node %s here, but %s (%s:%u) says it is: two nodes joined through different nodes at once, or the topology files list nodes in different orders; restart %s with store.discovery_addr set",
				i, t->nodes[i].name, nm, ad, port, nm);
		return -EPROTO;
	}
	pthread_mutex_lock(&m->table_lock);
	if (!pc_node_listed(&t->nodes[i]))
		ret = topology_fill_node(t, i, nm, ad, port);
	pthread_mutex_unlock(&m->table_lock);
	if (ret) {
		pc_warn("a peer says entry %u of the node table is '%s' (%s:%u), which this node cannot take (a bad or taken name)",
			i, nm, ad, port);
		return -EPROTO;
	}
	__atomic_fetch_add(&m->generation, 1, __ATOMIC_RELAXED);
	pc_info("node %s (%s:%u) is in the node table as entry %u", nm, ad, port, i);
	return 0;
}

int members_take_entry(struct members *m, const char *name, const char *address, uint16_t port,
		       uint32_t *index)
{
	struct pc_topology *t = m->st->svc.topo;
	int ret = -ENOSPC;

	pthread_mutex_lock(&m->table_lock);
	for (uint32_t i = 0; i < m->nr && ret == -ENOSPC; i++)
		if (!pc_node_listed(&t->nodes[i])) {
			ret = topology_fill_node(t, i, name, address, port);
			*index = i;
		}
	pthread_mutex_unlock(&m->table_lock);
	if (!ret)
		__atomic_fetch_add(&m->generation, 1, __ATOMIC_RELAXED);
	return ret;
}

/* ------------------------------------------------------------------ the ring */

void store_rings_free(struct ring *list)
{
	while (list) {
		struct ring *r = list;

		list = r->retired_next;
		ring_destroy(r);
	}
}

/* Free the rings retired before the last epoch once no reader of that epoch is left,
 * and start a new epoch (under member_lock). */
static void reclaim_rings(struct pc_store *st)
{
	struct store_svc *sv = &st->svc;
	unsigned cur = __atomic_load_n(&sv->ring_epoch, __ATOMIC_SEQ_CST) & 1;

	if (__atomic_load_n(&sv->ring_readers[cur ^ 1], __ATOMIC_SEQ_CST))
		return;
	store_rings_free(st->retired_before);
	st->retired_before = st->retired;
	st->retired = NULL;
	__atomic_store_n(&sv->ring_epoch, cur ^ 1, __ATOMIC_SEQ_CST);
}

static int change_ring(struct pc_store *st, uint32_t node, bool member)
{
	struct store_svc *sv = &st->svc;
	struct ring *old = store_ring(sv), *r;
	int ret;

	if (ring_contains(old, node) == member)
		return 0;
	r = ring_dup(old);
	if (!r)
		return -ENOMEM;
	ret = member ? ring_add(r, node, sv->topo->nodes[node].name) : ring_remove(r, node);
	if (ret) {
		ring_destroy(r);
		return ret;
	}
	__atomic_store_n(&sv->ring, r, __ATOMIC_SEQ_CST);
	pc_stat_add(&st->member_changes, 1);
	old->retired_next = st->retired;
	st->retired = old;
	st->mode_ops->member_changed(st->mode, node, member, old);
	reclaim_rings(st);
	return 1;
}

int members_set(struct members *m, uint32_t node, bool member, bool told)
{
	struct pc_store *st = m->st;
	bool left_changed = false;
	int ret;

	if (node >= m->nr)
		return -EINVAL;
	/* An entry not learned yet has no name, and a ring point is the hash of the
	 * name: in the ring it would place keys unlike every other node. Its first
	 * heartbeat (or listing) brings it in; a leave of it is no news here. */
	if (!pc_node_listed(&st->svc.topo->nodes[node]))
		return -ENXIO;
	pthread_mutex_lock(&st->member_lock);
	if (told) {
		left_changed = m->p[node].left != !member;
		__atomic_store_n(&m->p[node].left, !member, __ATOMIC_RELAXED);
		m->p[node].left_inc = __atomic_load_n(&m->p[node].incarnation, __ATOMIC_RELAXED);
	}
	ret = change_ring(st, node, member);
	pthread_mutex_unlock(&st->member_lock);
	/* a node down that is told to have left changes no ring, but the view (down
	 * becomes left): a client holding this generation's view would never see it */
	if (ret > 0 || left_changed)
		__atomic_fetch_add(&m->generation, 1, __ATOMIC_RELAXED);
	if (ret > 0)
		pc_info("node %s %s the ring", node_name(m, node), member ? "joined" : "left");
	return ret < 0 ? ret : 0;
}

/* This node left or came back on purpose: its live record goes or comes back. */
static void registry_left(struct members *m, bool left)
{
	if (!m->reg)
		return;
	pthread_mutex_lock(&m->reg_lock);
	if (left && !m->reg_left)
		m->reg_ops->leave(m->reg);
	m->reg_left = left;
	pthread_mutex_unlock(&m->reg_lock);
}

int store_set_member(struct pc_store *st, uint32_t node, bool member)
{
	return members_set(st->members, node, member, true);
}

static int set_member(struct pc_store *st, const char *node, bool member)
{
	struct store_svc *sv = st ? &st->svc : NULL;
	int idx = sv && node ? pc_topology_find_node(sv->topo, node) : -1;
	struct proto_member msg;
	struct pc_rpc *rpcs;
	uint32_t nr = 0;
	int ret;

	if (idx < 0)
		return st ? -ENXIO : -EINVAL;
	ret = members_set(st->members, (uint32_t)idx, member, true);
	if (ret || sv->self == PC_PEER_NONE)
		return ret;	/* a client changes its own view: nodes take MEMBER from nodes */
	if ((uint32_t)idx == sv->self)
		registry_left(st->members, !member);
	/* tell every other node that is up here (the joining one too); a node leaving is
	 * not asked (it may be dead) */
	rpcs = calloc(sv->topo->nr_nodes, sizeof(*rpcs));
	if (!rpcs)
		return -ENOMEM;
	msg = (struct proto_member){ .node = (uint32_t)idx, .member = member };
	for (uint32_t i = 0; i < sv->topo->nr_nodes; i++)
		if (i != sv->self && pc_node_listed(&sv->topo->nodes[i]) &&
		    (i == (uint32_t)idx ? member : ring_contains(store_ring(sv), i) || !st->members->task))
			rpcs[nr++] = (struct pc_rpc){ .peer = i, .opcode = PC_RPC_MEMBER, .req = &msg,
						      .req_len = sizeof(msg) };
	pc_fabric_call(sv->fabric, rpcs, nr);
	for (uint32_t r = 0; r < nr; r++) {
		if (rpcs[r].status)
			pc_warn("node %s did not hear that %s %s: %s", sv->topo->nodes[rpcs[r].peer].name,
				node, member ? "joined" : "left", strerror(-rpcs[r].status));
		pc_msg_free(&rpcs[r].resp);
	}
	free(rpcs);
	return 0;
}

int members_rpc_member(struct members *m, uint32_t from, const void *req, size_t len)
{
	struct store_svc *sv = &m->st->svc;
	struct proto_member msg;

	if (len != sizeof(msg))
		return -EPROTO;
	memcpy(&msg, req, sizeof(msg));
	if (msg.member > 1 || msg.node >= m->nr)
		return -EPROTO;
	if (from != PC_PEER_TOOL)
		return members_set(m, msg.node, msg.member, true);
	if (msg.node != sv->self)
		return -EPERM;		/* a tool drains or joins the node it reached */
	pc_info("told by a tool to %s the ring", msg.member ? "join" : "leave");
	return pc_store_set_member(m->st, sv->topo->nodes[sv->self].name, msg.member);
}

/* ------------------------------------------------------------------ the view */

static enum proto_member_state state_of(struct members *m, const struct ring *r, uint32_t i)
{
	if (ring_contains(r, i))
		return PROTO_UP;
	return __atomic_load_n(&m->p[i].left, __ATOMIC_RELAXED) ? PROTO_LEFT : PROTO_DOWN;
}

int pc_store_set_member(struct pc_store *st, const char *node, bool member)
{
	unsigned pass;
	int ret;

	if (!st)
		return -EINVAL;
	pass = store_ring_enter(&st->svc);
	ret = set_member(st, node, member);
	store_ring_exit(&st->svc, pass);
	return ret;
}

int pc_store_member(const struct pc_store *st, const char *node, enum pc_member_state *state,
		    uint64_t *incarnation)
{
	int idx = st && node ? pc_topology_find_node(st->svc.topo, node) : -1;
	struct members *m;

	if (idx < 0)
		return st ? -ENXIO : -EINVAL;
	m = st->members;
	if (state) {
		struct store_svc *sv = (struct store_svc *)&st->svc;
		unsigned pass = store_ring_enter(sv);

		*state = (enum pc_member_state)state_of(m, store_ring(sv), (uint32_t)idx);
		store_ring_exit(sv, pass);
	}
	if (incarnation)
		*incarnation = (uint32_t)idx == st->svc.self ?
				       st->svc.fabric->incarnation :
				       __atomic_load_n(&m->p[idx].incarnation, __ATOMIC_RELAXED);
	return 0;
}

uint64_t pc_store_generation(const struct pc_store *st)
{
	return st ? __atomic_load_n(&st->members->generation, __ATOMIC_RELAXED) : 0;
}

int members_put_view(struct members *m, bool whole, struct pc_msg *resp)
{
	struct store_svc *sv = &m->st->svc;
	struct ring *r = store_ring(sv);
	uint64_t now = pc_env_now(sv->env);
	struct proto_view v = { .magic = PROTO_VIEW_MAGIC, .nr = whole ? m->nr : 0,
				.generation = __atomic_load_n(&m->generation, __ATOMIC_RELAXED),
				.incarnation = sv->fabric->incarnation, .self = sv->self,
				.nr_nodes = m->nr };
	int ret = pc_msg_reserve(resp, sizeof(v) + v.nr * sizeof(struct proto_view_node));

	if (ret)
		return ret;
	pc_msg_append(resp, &v, sizeof(v));
	for (uint32_t i = 0; i < v.nr; i++) {
		const struct pc_node *n = &sv->topo->nodes[i];
		uint64_t at = __atomic_load_n(&m->p[i].heard_ns, __ATOMIC_RELAXED);
		struct proto_view_node e = {
			.incarnation = __atomic_load_n(&m->p[i].incarnation, __ATOMIC_RELAXED),
			.silent_ms = !at ? UINT64_MAX : at < now ? (now - at) / 1000000 : 0,
			.state = (uint8_t)state_of(m, r, i), .port = n->port,
		};

		if (i == sv->self) {
			e.incarnation = sv->fabric->incarnation;
			e.silent_ms = 0;
		}
		snprintf(e.name, sizeof(e.name), "%s", n->name);
		snprintf(e.address, sizeof(e.address), "%s", n->address);
		pc_msg_append(resp, &e, sizeof(e));
	}
	return 0;
}

int members_rpc_heartbeat(struct members *m, uint32_t from, const void *req, size_t len,
			  struct pc_msg *resp)
{
	struct proto_heartbeat hb;
	bool whole;

	if (len != sizeof(hb))
		return -EPROTO;
	memcpy(&hb, req, sizeof(hb));
	if (hb.node != PC_PEER_NONE && (hb.node >= m->nr || hb.node != from))
		return -EPROTO;
	if (hb.node != PC_PEER_NONE) {
		int ret = !hb.name[0] ? (pc_node_listed(&m->st->svc.topo->nodes[hb.node]) ? 0 : -EPROTO) :
					members_learn(m, hb.node, hb.name, sizeof(hb.name), hb.address,
					sizeof(hb.address), hb.port);

		if (ret)
			return ret;
		heard(m, hb.node, hb.incarnation, pc_env_now(m->st->svc.env));
	}
	/* a node's clock moves ours; a client or tool echoes the generation it took
	 * from us (client_tick), which tells only whether its view is ours */
	if (hb.node != PC_PEER_NONE)
		generation_at_least(m, hb.generation);
	whole = hb.node == PC_PEER_NONE &&
		!((hb.flags & PROTO_HB_HAVE_VIEW) &&
		  hb.generation == __atomic_load_n(&m->generation, __ATOMIC_RELAXED));
	return members_put_view(m, whole, resp);
}

/* ------------------------------------------------------------------ the task */

static const struct proto_view *view_of(const struct pc_rpc *r)
{
	const struct proto_view *v = r->resp.data;

	if (r->status || r->resp.len < sizeof(*v) || v->magic != PROTO_VIEW_MAGIC ||
	    r->resp.len != sizeof(*v) + (size_t)v->nr * sizeof(struct proto_view_node))
		return NULL;
	return v;
}

static void decide(struct members *m, uint64_t now);

/* A node: heartbeat everyone, then decide who is down and who is back. */
static void node_tick(struct members *m)
{
	struct store_svc *sv = &m->st->svc;
	const struct pc_node *me = &sv->topo->nodes[sv->self];
	struct proto_heartbeat hb = { .node = sv->self, .incarnation = sv->fabric->incarnation,
				      .port = me->port };
	struct pc_rpc *rpcs = calloc(m->nr, sizeof(*rpcs));
	uint32_t n = 0;
	uint64_t now;

	if (!rpcs)
		return;
	snprintf(hb.name, sizeof(hb.name), "%s", me->name);
	snprintf(hb.address, sizeof(hb.address), "%s", me->address);
	hb.generation = __atomic_load_n(&m->generation, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < m->nr; i++)
		if (i != sv->self && pc_node_listed(&sv->topo->nodes[i]))
			rpcs[n++] = (struct pc_rpc){ .peer = i, .opcode = PC_RPC_HEARTBEAT, .req = &hb,
						     .req_len = sizeof(hb), .flags = PC_RPC_PROBE,
						     .timeout_ms = (uint32_t)(m->heartbeat_ns / 1000000) };
	pc_fabric_call(sv->fabric, rpcs, n);
	now = pc_env_now(sv->env);
	for (uint32_t k = 0; k < n; k++) {
		const struct proto_view *v = view_of(&rpcs[k]);

		if (v && v->self == rpcs[k].peer) {
			heard(m, rpcs[k].peer, v->incarnation, now);
			generation_at_least(m, v->generation);
		}
		pc_msg_free(&rpcs[k].resp);
	}
	free(rpcs);
	decide(m, now);
}

/* Take out the members silent for the failure timeout, put back the ones heard. */
static void decide(struct members *m, uint64_t now)
{
	struct store_svc *sv = &m->st->svc;

	for (uint32_t i = 0; i < m->nr; i++) {
		struct member_peer *p = &m->p[i];
		uint64_t at = __atomic_load_n(&p->heard_ns, __ATOMIC_RELAXED);
		uint64_t inc = __atomic_load_n(&p->incarnation, __ATOMIC_RELAXED);
		uint64_t since = at ? at : m->opened_ns;
		uint64_t silent = since < now ? now - since : 0;	/* heard after now was read */
		bool gone = __atomic_load_n(&p->gone, __ATOMIC_RELAXED), member, back;
		unsigned pass;

		if (i == sv->self || !pc_node_listed(&sv->topo->nodes[i]))
			continue;
		pass = store_ring_enter(sv);
		member = ring_contains(store_ring(sv), i);
		store_ring_exit(sv, pass);
		if (member && (silent > m->failure_ns || gone)) {
			if (gone)
				pc_warn("node %s (%s:%u): its lease in %s expired: taken out of the ring",
					node_name(m, i), sv->topo->nodes[i].address,
					sv->topo->nodes[i].port, m->reg_ops->name);
			else
				pc_warn("node %s (%s:%u): no heartbeat for %llu ms: taken out of the ring",
					node_name(m, i), sv->topo->nodes[i].address,
					sv->topo->nodes[i].port, (unsigned long long)(silent / 1000000));
			members_set(m, i, false, false);
			continue;
		}
		if (gone)
			continue;
		if (member || !at || silent > m->failure_ns)
			continue;
		pthread_mutex_lock(&m->st->member_lock);
		if (p->left && !p->left_inc)
			p->left_inc = inc;	/* it left before we heard it: this is that run */
		back = !p->left || p->left_inc != inc;
		if (back)
			__atomic_store_n(&p->left, false, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&m->st->member_lock);
		if (back) {
			pc_info("node %s heard again (incarnation %016llx)", node_name(m, i),
				(unsigned long long)inc);
			members_set(m, i, true, false);
		}
	}
}

void members_take_view(struct members *m, const struct proto_view *v)
{
	const struct proto_view_node *e = (const void *)(v + 1);
	uint64_t now = pc_env_now(m->st->svc.env);

	for (uint32_t i = 0; i < v->nr && i < m->nr; i++) {
		bool up = e[i].state == PROTO_UP;

		if (i == m->st->svc.self || !e[i].name[0] ||
		    members_learn(m, i, e[i].name, sizeof(e[i].name), e[i].address,
				  sizeof(e[i].address), e[i].port))
			continue;	/* vacant there, or not the node this entry holds here */
		if (e[i].incarnation) {
			__atomic_store_n(&m->p[i].incarnation, e[i].incarnation, __ATOMIC_RELAXED);
			/* silent_ms * 10^6 < now without the product: a huge silent_ms would
			 * wrap it to "just heard" */
			if (now && e[i].silent_ms <= (now - 1) / 1000000)
				__atomic_store_n(&m->p[i].heard_ns, now - e[i].silent_ms * 1000000,
						 __ATOMIC_RELAXED);
		}
		/* a leave is of the run the view names (0: the first one heard after), not
		 * of whichever run this node hears next: a node that restarted since is
		 * back here too, as it is on the node that answered */
		pthread_mutex_lock(&m->st->member_lock);
		__atomic_store_n(&m->p[i].left, e[i].state == PROTO_LEFT, __ATOMIC_RELAXED);
		m->p[i].left_inc = e[i].incarnation;
		pthread_mutex_unlock(&m->st->member_lock);
		members_set(m, i, up, false);
	}
}

/* A client: ask one node for its view; the next one if it does not answer. */
static void client_tick(struct members *m)
{
	struct store_svc *sv = &m->st->svc;

	for (uint32_t tries = 0; tries < m->nr; tries++) {
		uint32_t i = m->ask % m->nr;
		struct proto_heartbeat hb = {
			.node = PC_PEER_NONE, .incarnation = sv->fabric->incarnation,
			.flags = m->ask_generation ? PROTO_HB_HAVE_VIEW : 0,
			.generation = m->ask_generation,
		};
		struct pc_rpc r = { .peer = i, .opcode = PC_RPC_HEARTBEAT, .req = &hb,
				    .req_len = sizeof(hb), .flags = PC_RPC_PROBE,
				    .timeout_ms = (uint32_t)(m->heartbeat_ns / 1000000) };
		const struct proto_view *v;

		pc_fabric_call(sv->fabric, &r, 1);
		v = view_of(&r);
		if (v && v->self == i && v->nr_nodes == m->nr) {
			heard(m, i, v->incarnation, pc_env_now(sv->env));
			generation_at_least(m, v->generation);
			if (v->nr)
				members_take_view(m, v);
			m->ask_generation = v->generation;
			pc_msg_free(&r.resp);
			return;
		}
		pc_msg_free(&r.resp);
		m->ask++;
		m->ask_generation = 0;
	}
}

/* The registry: keep this node's lease, list who is alive, decide. While the
 * registry cannot be reached nothing changes (warned once, retried with backoff);
 * for a failure timeout after it answers again, absence does not count yet (the
 * nodes are writing their records again). A registry that watches its records
 * (registry_ops.changed) is listed only when they changed, and at least every
 * failure timeout (at least every second) in case its watch stalled; in between,
 * the nodes live at the last listing are heard from again. */
static bool registry_look(struct members *m, uint64_t now)
{
	uint64_t every = m->failure_ns > 1000000000ULL ? m->failure_ns : 1000000000ULL;

	/* every heartbeat too while absence does not count yet, and one past it */
	return !m->reg_ops->changed || m->reg_ops->changed(m->reg) || !m->reg_ok_since ||
	       now - m->reg_ok_since <= m->failure_ns + m->heartbeat_ns ||
	       now - m->reg_listed_at >= every;
}

static void registry_tick(struct members *m)
{
	struct store_svc *sv = &m->st->svc;
	const struct pc_node *me = sv->self != PC_PEER_NONE ? &sv->topo->nodes[sv->self] : NULL;
	uint64_t now = pc_env_now(sv->env);
	struct registry_entry *e = calloc(m->nr, sizeof(*e));
	uint8_t *live = calloc(m->nr, 1);
	uint32_t n = 0;
	int ret = e && live ? 0 : -ENOMEM;
	bool look = false;

	if (now < m->reg_retry_at)
		goto out;
	pthread_mutex_lock(&m->reg_lock);
	if (!ret && me && !m->reg_left)
		ret = m->reg_ops->alive(m->reg, sv->self, me->name, sv->fabric->incarnation,
					(uint32_t)(m->failure_ns / 1000000));
	if (!ret && (look = registry_look(m, now)))
		ret = m->reg_ops->list(m->reg, e, m->nr, &n);
	pthread_mutex_unlock(&m->reg_lock);
	if (ret) {
		uint32_t shift = m->reg_fails < 6 ? m->reg_fails : 6;

		m->reg_fails++;
		m->reg_retry_at = now + (m->heartbeat_ns << shift);
		m->reg_ok_since = 0;
		if (!m->reg_warned)
			pc_warn("store.discovery %s: the registry cannot be reached (%s): serving on the last view, retrying",
				m->reg_ops->name, strerror(-ret));
		m->reg_warned = true;
		goto out;
	}
	if (m->reg_warned)
		pc_info("store.discovery %s: the registry answers again", m->reg_ops->name);
	m->reg_warned = false;
	m->reg_fails = 0;
	if (!m->reg_ok_since)
		m->reg_ok_since = now;
	if (!look) {	/* nothing changed: who was live is */
		for (uint32_t i = 0; i < m->nr; i++)
			if (m->p[i].live_record)
				heard(m, i, __atomic_load_n(&m->p[i].incarnation, __ATOMIC_RELAXED), now);
		decide(m, now);
		goto out;
	}
	m->reg_listed_at = now;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = e[k].index;

		if (i >= m->nr || members_learn(m, i, e[k].name, sizeof(e[k].name), e[k].address,
						sizeof(e[k].address), e[k].port))
			continue;
		if (e[k].live && i != sv->self) {
			live[i] = 1;
			heard(m, i, e[k].incarnation, now);
		}
	}
	/* no live record is down at once, but not while the records come back */
	for (uint32_t i = 0; i < m->nr; i++) {
		m->p[i].live_record = live[i];
		__atomic_store_n(&m->p[i].gone, !live[i] && now - m->reg_ok_since >= m->failure_ns,
				 __ATOMIC_RELAXED);
	}
	decide(m, now);
out:
	free(e);
	free(live);
}

static void run(void *arg)
{
	struct members *m = arg;

	while (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
		/* no pass around a tick: a tick that takes many nodes out lets each ring
		 * it replaces go at once (decide reads the ring in short passes, and ring
		 * changes hold member_lock, under which no ring is freed) */
		if (m->reg)
			registry_tick(m);
		else if (m->st->svc.self == PC_PEER_NONE)
			client_tick(m);
		else
			node_tick(m);
		pthread_mutex_lock(&m->st->member_lock);
		reclaim_rings(m->st);	/* what the changes of other threads left */
		pthread_mutex_unlock(&m->st->member_lock);
		for (uint64_t t = 0; t < m->heartbeat_ns && !__atomic_load_n(&m->stop, __ATOMIC_RELAXED);
		     t += SLICE_NS)
			pc_env_sleep(m->st->svc.env, SLICE_NS);
	}
}

int members_open(struct pc_store *st, struct member_boot *boot, struct members **out)
{
	const struct pc_store_cfg *c = &st->svc.topo->store;
	struct members *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->reg_ops = boot->reg_ops;
	m->reg = boot->reg;
	boot->reg = NULL;
	m->st = st;
	m->nr = st->svc.topo->nr_nodes;
	m->p = calloc(m->nr, sizeof(*m->p));
	if (!m->p) {
		free(m);
		return -ENOMEM;
	}
	m->opened_ns = pc_env_now(st->svc.env);
	m->heartbeat_ns = (uint64_t)c->heartbeat_ms * 1000000;
	m->failure_ns = (uint64_t)c->failure_timeout_ms * 1000000;
	m->generation = 1;
	pthread_mutex_init(&m->table_lock, NULL);
	pthread_mutex_init(&m->reg_lock, NULL);
	*out = m;
	if (boot->view)
		members_take_view(m, boot->view);	/* who is down, as the cluster sees it */
	return 0;
}

int members_start(struct members *m)
{
	if (!m->heartbeat_ns || m->st->svc.topo->store.discovery == PC_DISCOVERY_STATIC ||
	    (!m->reg && m->nr <= (m->st->svc.self == PC_PEER_NONE ? 0u : 1u)))
		return 0;
	m->opened_ns = pc_env_now(m->st->svc.env);
	return pc_env_spawn(m->st->svc.env, "pc-members", run, m, &m->task);
}

void members_close(struct members *m)
{
	if (!m)
		return;
	if (m->task) {
		__atomic_store_n(&m->stop, 1, __ATOMIC_RELAXED);
		pc_env_join(m->st->svc.env, m->task);
	}
	if (m->reg) {
		if (m->st->svc.self != PC_PEER_NONE && !m->reg_left)
			m->reg_ops->leave(m->reg);	/* a node that closes is gone */
		m->reg_ops->close(m->reg);
	}
	pthread_mutex_destroy(&m->reg_lock);
	pthread_mutex_destroy(&m->table_lock);
	free(m->p);
	free(m);
}
