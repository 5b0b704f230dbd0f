/*
 * member_join.c - joining a running cluster: a node or client that knows it only by
 * store.discovery_addr asks one of its nodes for the node table (PC_RPC_JOIN), and
 * a node also for the entry it holds in it.
 *
 * The table has store.max_nodes entries: the nodes the topology files list, then
 * vacant ones. A node keeps the entry its name holds; a new name takes the lowest
 * vacant entry, which only the lowest member of the ring gives out (another node
 * answers -EAGAIN naming it), so two newcomers asking different nodes at once do
 * not get the same entry while the members agree who is lowest. The others learn
 * the newcomer from its first heartbeat (member.c), clients from the views they
 * pull. Both sides compare placement settings as text, so a mismatch is refused
 * with the key named, here and there.
 *
 * The newcomer asks before its own fabric opens, through a tool's tcp fabric to the
 * address (every backend serves RPCs over tcp at the node's port). Nobody answering
 * is not fatal for a node or client its topology lists (the first node of a cluster
 * has nobody to ask): it starts from that list.
 *
 * Not for: heartbeats, failure detection, the ring (member.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/topology.h"
#include "member.h"
#include "member_registry.h"
#include "proto.h"
#include "store.h"

#define MAX_HOPS 3			/* -EAGAIN redirects a newcomer follows */

/* ------------------------------------------------------------------ answering */

static int answer(struct members *m, const struct proto_join_ans *a, const char *text,
		  struct pc_msg *resp)
{
	static const char pad[8];
	size_t padded = PROTO_JOIN_TEXT_PADDED(a->text_len);
	int ret = pc_msg_reserve(resp, sizeof(*a) + padded);

	if (!ret)
		ret = pc_msg_append(resp, a, sizeof(*a));
	if (!ret)
		ret = pc_msg_append(resp, text, a->text_len);
	if (!ret)
		ret = pc_msg_append(resp, pad, padded - a->text_len);
	return ret ? ret : members_put_view(m, true, resp);
}

/* The lowest node in this node's ring: the one that gives out vacant entries. */
static uint32_t allocator(const struct store_svc *sv)
{
	const struct ring *r = store_ring((struct store_svc *)sv);

	for (uint32_t i = 0; i < sv->topo->nr_nodes; i++)
		if (ring_contains(r, i))
			return i;
	return sv->self;
}

int members_rpc_join(struct pc_store *st, const void *req, size_t len, struct pc_msg *resp)
{
	struct members *m = st->members;
	struct store_svc *sv = &st->svc;
	char ours[TOPOLOGY_PLACEMENT_TEXT_MAX], diff[256], name[PC_NAME_MAX], address[PC_NAME_MAX];
	struct proto_join j;
	struct proto_join_ans a = { .index = PC_PEER_NONE, .ask = PC_PEER_NONE };
	const char *theirs = (const char *)req + sizeof(j);
	int idx;

	if (len < sizeof(j))
		return -EPROTO;
	memcpy(&j, req, sizeof(j));
	if (j.text_len != len - sizeof(j) || j.flags > PROTO_JOIN_NODE)
		return -EPROTO;
	snprintf(name, sizeof(name), "%.*s", (int)strnlen(j.name, sizeof(j.name)), j.name);
	snprintf(address, sizeof(address), "%.*s", (int)strnlen(j.address, sizeof(j.address)),
		 j.address);
	if (topology_placement_text(sv->topo, ours, sizeof(ours)))
		return -ENOMEM;
	a.text_len = (uint16_t)strlen(ours);
	if (topology_placement_diff(ours, a.text_len, theirs, j.text_len, diff, sizeof(diff))) {
		pc_warn("%s %s (%s:%u) asked to join with other placement settings, refused: %s",
			j.flags ? "node" : "a client", j.flags ? name : "", address, j.port, diff);
		a.status = -ESTALE;
		return answer(m, &a, ours, resp);
	}
	if (!j.flags)
		return answer(m, &a, ours, resp);
	if (!name[0] || !address[0] || !j.port)
		return -EPROTO;
	idx = pc_topology_find_node(sv->topo, name);
	if (idx >= 0) {
		const struct pc_node *n = &sv->topo->nodes[idx];

		if (strcmp(n->address, address) || n->port != j.port) {
			pc_warn("node %s asked to join from %s:%u, but the table has it at %s:%u: refused",
				name, address, j.port, n->address, n->port);
			a.status = -EEXIST;
		}
		a.index = (uint32_t)idx;
		return answer(m, &a, ours, resp);
	}
	a.ask = allocator(sv);
	if (a.ask != sv->self) {
		a.status = -EAGAIN;
		return answer(m, &a, ours, resp);
	}
	a.status = members_take_entry(m, name, address, j.port, &a.index);
	if (a.status)
		pc_warn("node %s (%s:%u) asked to join, but all %u entries of the node table are taken: raise store.max_nodes",
			name, address, j.port, sv->topo->nr_nodes);
	else
		pc_info("node %s (%s:%u) joins the cluster as entry %u", name, address, j.port, a.index);
	return answer(m, &a, ours, resp);
}

/* ------------------------------------------------------------------ asking */

struct join_reply {
	struct pc_msg msg;
	struct proto_join_ans ans;
	const char *text;
	const struct proto_view *view;
	const struct proto_view_node *nodes;
};

static int decode(struct join_reply *r)
{
	const char *p = r->msg.data;
	size_t len = r->msg.len, off;

	if (len < sizeof(r->ans))
		return -EPROTO;
	memcpy(&r->ans, p, sizeof(r->ans));
	off = sizeof(r->ans) + PROTO_JOIN_TEXT_PADDED(r->ans.text_len);
	if (len < off + sizeof(struct proto_view))
		return -EPROTO;
	r->text = p + sizeof(r->ans);
	r->view = (const void *)(p + off);
	r->nodes = (const void *)(r->view + 1);
	if (r->view->magic != PROTO_VIEW_MAGIC || r->view->nr != r->view->nr_nodes ||
	    len != off + sizeof(*r->view) + (size_t)r->view->nr * sizeof(*r->nodes) ||
	    r->view->self >= r->view->nr)
		return -EPROTO;
	return 0;
}

/* Send the request to whichever node answers at host:port, through a tool's fabric. */
static int ask(const struct pc_topology *t, const struct store_deps *d, const char *host,
	       uint16_t port, const struct pc_msg *req, struct join_reply *r)
{
	struct pc_topology tmp = *t;
	struct pc_node seed = { .vacant = true };
	struct pc_fabric_params p = { .size = sizeof(p), .topo = &tmp, .self = PC_PEER_NONE,
				      .env = d->env, .flags = PC_FABRIC_ANY_NODE };
	struct pc_rpc rpc = { .peer = 0, .opcode = PC_RPC_JOIN, .req = req->data,
			      .req_len = req->len, .flags = PC_RPC_PROBE };
	struct pc_fabric *f;
	char err[PC_ERR_MAX];
	int ret;

	tmp.nodes = &seed;
	tmp.nr_nodes = 1;
	tmp.store.max_nodes = 0;
	if (topology_fill_node(&tmp, 0, "discovery", host, port))
		return -EINVAL;
	ret = d->open_fabric("tcp", &p, &f, err, sizeof(err));
	if (ret) {
		pc_warn("cannot open a tcp client to ask %s:%u to join: %s", host, port, err);
		return ret;
	}
	ret = pc_fabric_call(f, &rpc, 1);
	ret = ret ? ret : rpc.status;
	pc_fabric_close(f);
	*r = (struct join_reply){ .msg = rpc.resp };
	if (!ret)
		ret = decode(r);
	if (ret)
		pc_msg_free(&r->msg);
	return ret;
}

/* The node table of the cluster in t: its n entries, with what the topology says
 * about the ones it lists (their rails and disks: this node's own above all). */
static int take_table(struct pc_topology *t, const struct registry_entry *e, uint32_t n)
{
	struct pc_node *nodes = calloc(t->nr_nodes, sizeof(*nodes));

	if (!nodes)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		nodes[i] = (struct pc_node){ .vacant = true };
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = e[k].index;
		int local = pc_topology_find_node(t, e[k].name);

		if (i >= t->nr_nodes || !nodes[i].vacant) {
			free(nodes);
			return -EPROTO;
		}
		if (local >= 0) {
			nodes[i] = t->nodes[local];
			snprintf(nodes[i].address, sizeof(nodes[i].address), "%s", e[k].address);
			nodes[i].port = e[k].port;
		} else {
			struct pc_topology one = { .nodes = &nodes[i], .nr_nodes = 1 };

			if (topology_fill_node(&one, 0, e[k].name, e[k].address, e[k].port)) {
				free(nodes);
				return -EPROTO;
			}
		}
	}
	free(t->nodes);
	t->nodes = nodes;
	return 0;
}

/* The entries a join's answer holds, as the registry would give them. */
static int take_view_table(struct pc_topology *t, const struct join_reply *r)
{
	struct registry_entry *e = calloc(r->view->nr ? r->view->nr : 1, sizeof(*e));
	uint32_t n = 0;
	int ret;

	if (!e)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->view->nr; i++) {
		const struct proto_view_node *v = &r->nodes[i];

		if (!v->name[0])
			continue;
		e[n] = (struct registry_entry){ .index = i, .port = v->port };
		snprintf(e[n].name, sizeof(e[n].name), "%.*s", (int)strnlen(v->name, sizeof(v->name)),
			 v->name);
		snprintf(e[n].address, sizeof(e[n].address), "%.*s",
			 (int)strnlen(v->address, sizeof(v->address)), v->address);
		n++;
	}
	ret = take_table(t, e, n);
	free(e);
	return ret;
}

/* One "host:port" of a comma-separated list; *p moves past it. */
static bool next_addr(const char **p, char *host, size_t cap, uint16_t *port)
{
	const char *s = *p, *end, *colon;
	unsigned long v;
	char *e;

	while (*s == ',' || *s == ' ')
		s++;
	if (!*s)
		return false;
	end = s + strcspn(s, ", ");
	*p = end;
	colon = memrchr(s, ':', (size_t)(end - s));
	if (!colon || colon == s || (size_t)(colon - s) >= cap)
		return next_addr(p, host, cap, port);
	v = strtoul(colon + 1, &e, 10);
	if (e != end || !v || v > 65535)
		return next_addr(p, host, cap, port);
	snprintf(host, cap, "%.*s", (int)(colon - s), s);
	*port = (uint16_t)v;
	return true;
}

/* Follow -EAGAIN redirects from one seed. 0 with the reply, or -errno. */
static int ask_seed(const struct pc_topology *t, const struct store_deps *d, const char *host,
		    uint16_t port, const struct pc_msg *req, struct join_reply *r)
{
	char h[PC_NAME_MAX];
	int ret;

	snprintf(h, sizeof(h), "%s", host);
	for (int hop = 0; hop < MAX_HOPS; hop++) {
		const struct proto_view_node *n;

		ret = ask(t, d, h, port, req, r);
		if (ret || r->ans.status != -EAGAIN)
			return ret;
		if (r->ans.ask >= r->view->nr || !r->nodes[r->ans.ask].name[0]) {
			pc_msg_free(&r->msg);
			return -EPROTO;
		}
		n = &r->nodes[r->ans.ask];
		snprintf(h, sizeof(h), "%.*s", (int)strnlen(n->address, sizeof(n->address)), n->address);
		port = n->port;
		pc_msg_free(&r->msg);
	}
	return -ELOOP;
}

static int refused(const struct pc_topology *t, const char *self_name, const char *at,
		   const struct join_reply *r, const char *ours, char *err, size_t errlen)
{
	char diff[256];
	const char *name = self_name ? self_name : "a client";

	switch (r->ans.status) {
	case -ESTALE:
		topology_placement_diff(ours, strlen(ours), r->text, r->ans.text_len, diff, sizeof(diff));
		snprintf(err, errlen, "%s: the cluster at %s has other placement settings: %s; use the cluster's settings",
			 t->source, at, diff);
		return -ESTALE;
	case -ENOSPC:
		snprintf(err, errlen, "%s: node %s cannot join the cluster at %s: its %u table entries are taken; raise store.max_nodes on every node and client",
			 t->source, name, at, t->nr_nodes);
		return -ENOSPC;
	case -EEXIST:
		snprintf(err, errlen, "%s: node %s cannot join the cluster at %s: a node of that name is at another address; give this node another name, or the address it had",
			 t->source, name, at);
		return -EEXIST;
	default:
		snprintf(err, errlen, "%s: the cluster at %s refused node %s: %s", t->source, at, name,
			 strerror(-r->ans.status));
		return r->ans.status < 0 ? r->ans.status : -EPROTO;
	}
}

static int build_request(const struct pc_topology *t, const struct pc_node *self, char *text,
			 size_t cap, struct pc_msg *req)
{
	struct proto_join j = { .flags = self ? PROTO_JOIN_NODE : 0 };
	int ret = topology_placement_text(t, text, cap);

	if (ret)
		return ret;
	j.text_len = (uint16_t)strlen(text);
	if (self) {
		j.port = self->port;
		snprintf(j.name, sizeof(j.name), "%s", self->name);
		snprintf(j.address, sizeof(j.address), "%s", self->address);
	}
	ret = pc_msg_append(req, &j, sizeof(j));
	return ret ? ret : pc_msg_append(req, text, j.text_len);
}

/* Ask a node at store.discovery_addr. */
static int discover_embedded(struct pc_topology *t, const char *self_name, const struct store_deps *d,
			     struct proto_view **view, char *err, size_t errlen)
{
	const char *list = t->store.discovery_addr, *p = list;
	int self = self_name ? pc_topology_find_node(t, self_name) : -1;
	char ours[TOPOLOGY_PLACEMENT_TEXT_MAX], host[PC_NAME_MAX], at[PC_NAME_MAX + 8], why[64] = "";
	struct pc_msg req = { 0 };
	struct join_reply r;
	uint16_t port;
	bool asked = false;
	int ret;

	*view = NULL;
	if (!list[0] || !t->store.max_nodes)
		return 0;
	ret = build_request(t, self >= 0 ? &t->nodes[self] : NULL, ours, sizeof(ours), &req);
	if (ret) {
		snprintf(err, errlen, "%s: out of memory", t->source);
		return ret;
	}
	ret = -EHOSTUNREACH;
	while (ret && next_addr(&p, host, sizeof(host), &port)) {
		if (self >= 0 && t->nodes[self].port == port && !strcmp(t->nodes[self].address, host))
			continue;	/* itself: the first node of a cluster */
		asked = true;
		snprintf(at, sizeof(at), "%s:%u", host, port);
		ret = ask_seed(t, d, host, port, &req, &r);
		if (ret)
			snprintf(why, sizeof(why), "%s", strerror(-ret));
	}
	pc_msg_free(&req);
	if (ret) {
		if (topology_nr_listed(t) && (!self_name || self >= 0)) {
			if (asked)
				pc_warn("%s: no node answered at store.discovery_addr %s (%s): starting from the %u nodes listed",
					t->source, list, why, topology_nr_listed(t));
			return 0;
		}
		snprintf(err, errlen, "%s: no node answered at store.discovery_addr %s (%s); start a node of the cluster first, or list the cluster's nodes",
			 t->source, list, asked ? why : "no host:port in it");
		return -EHOSTUNREACH;
	}
	if (r.ans.status)
		ret = refused(t, self_name, at, &r, ours, err, errlen);
	else if (r.view->nr != t->nr_nodes)
		ret = -EPROTO;
	else if (self_name && (r.ans.index >= t->nr_nodes ||
			       strncmp(r.nodes[r.ans.index].name, self_name, sizeof(r.nodes[0].name))))
		ret = -EPROTO;
	else
		ret = take_view_table(t, &r);
	if (ret == -EPROTO || ret == -ENOMEM)
		snprintf(err, errlen, "%s: the node at %s sent a node table this node cannot take (%s)",
			 t->source, at, strerror(-ret));
	if (!ret) {
		size_t vlen = r.msg.len - (size_t)((const char *)r.view - (const char *)r.msg.data);

		*view = malloc(vlen);
		if (*view)
			memcpy(*view, r.view, vlen);
		char entry[40] = "";

		if (self_name)
			snprintf(entry, sizeof(entry), "; this node is entry %u", r.ans.index);
		pc_info("%s: joined the cluster through %s (%u of %u table entries taken)%s",
			t->source, at, topology_nr_listed(t), t->nr_nodes, entry);
	}
	pc_msg_free(&r.msg);
	return ret;
}

/* Ask the registry (store.discovery etcd): the placement settings, this node's
 * entry, the table. */
static int discover_registry(struct pc_topology *t, const char *self_name,
			     const struct store_deps *d, struct member_boot *boot, char *err,
			     size_t errlen)
{
	const struct registry_ops *ops = d->registry;
	int self = self_name ? pc_topology_find_node(t, self_name) : -1;
	char text[TOPOLOGY_PLACEMENT_TEXT_MAX];
	struct registry_entry *e = NULL;
	uint32_t n = 0, index;
	void *reg = NULL;
	int ret;

	if (!ops) {
		snprintf(err, errlen, "%s: store.discovery is etcd, but this library was built without etcd support (libcurl); use embedded",
			 t->source);
		return -ENOTSUP;
	}
	ret = topology_placement_text(t, text, sizeof(text));
	if (!ret)
		ret = ops->open(t, text, &reg, err, errlen);
	if (ret)
		return ret;
	if (self >= 0) {
		const struct pc_node *me = &t->nodes[self];

		ret = ops->claim(reg, me->name, me->address, me->port, (uint32_t)self, t->nr_nodes,
				 &index);
		if (ret == -EEXIST)
			snprintf(err, errlen, "%s: node %s is in the cluster's table in etcd at another address; give this node another name, or the address it had",
				 t->source, me->name);
		else if (ret == -ENOSPC)
			snprintf(err, errlen, "%s: node %s cannot join: the %u entries of the cluster's table in etcd are taken; raise store.max_nodes on every node and client",
				 t->source, me->name, t->nr_nodes);
		else if (ret)
			snprintf(err, errlen, "%s: node %s: cannot claim its entry in etcd (%s): %s",
				 t->source, me->name, t->store.etcd_endpoints, strerror(-ret));
		else if (!t->store.max_nodes && index != (uint32_t)self) {
			snprintf(err, errlen, "%s: node %s is entry %u in etcd but nodes[%d] here: the topology files list nodes in different orders; list them alike (or set store.max_nodes)",
				 t->source, me->name, index, self);
			ret = -ESTALE;
		}
	}
	/* a static table stays the file's (its names are in the fingerprint); a table
	 * with room is the cluster's */
	if (!ret && t->store.max_nodes) {
		e = calloc(t->nr_nodes, sizeof(*e));
		ret = e ? ops->list(reg, e, t->nr_nodes, &n) : -ENOMEM;
		if (!ret)
			ret = take_table(t, e, n);
		if (ret)
			snprintf(err, errlen, "%s: cannot take the node table from etcd (%s): %s",
				 t->source, t->store.etcd_endpoints, strerror(-ret));
		free(e);
	}
	if (ret) {
		ops->close(reg);
		return ret;
	}
	boot->reg_ops = ops;
	boot->reg = reg;
	pc_info("%s: the node table is in etcd (%s%s): %u of %u entries taken%s", t->source,
		t->store.etcd_endpoints, t->store.etcd_prefix, topology_nr_listed(t), t->nr_nodes,
		self >= 0 ? "; this node holds its own" : "");
	return 0;
}

int members_discover(struct pc_topology *t, const char *self_name, const struct store_deps *d,
		     struct member_boot *boot, char *err, size_t errlen)
{
	/* a node its topology does not list: the store says so (a node that joins
	 * lists itself too) */
	if (d->no_heartbeats || t->store.discovery == PC_DISCOVERY_STATIC ||
	    (self_name && pc_topology_find_node(t, self_name) < 0))
		return 0;
	if (t->store.discovery == PC_DISCOVERY_ETCD)
		return discover_registry(t, self_name, d, boot, err, errlen);
	return discover_embedded(t, self_name, d, &boot->view, err, errlen);
}

void members_boot_fini(struct member_boot *boot)
{
	free(boot->view);
	if (boot->reg)
		boot->reg_ops->close(boot->reg);
	*boot = (struct member_boot){ 0 };
}
