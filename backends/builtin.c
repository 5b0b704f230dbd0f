/*
 * builtin.c - the one explicit list of built-in backends (rdma-core and libfabric
 * keep theirs the same way), opening them by name, the protocol names and their
 * fallback, and the store opened on them (pc_store_open).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "builtin.h"
#include "config/topology.h"

const struct pc_fabric_ops *const builtin_fabrics[] = {
#if PC_BACKEND_TCP
	&tcp_fabric_ops,
#endif
#if PC_BACKEND_VERBS
	&verbs_fabric_ops,
#endif
#if PC_BACKEND_RXE
	&rxe_fabric_ops,
#endif
	&inproc_fabric_ops,
	NULL,
};

const struct pc_storage_ops *const builtin_storages[] = {
	&posix_storage_ops,
	NULL,
};

const struct pc_fabric_ops *pc_fabric_find(const char *name)
{
	for (size_t i = 0; name && builtin_fabrics[i]; i++)
		if (!strcmp(builtin_fabrics[i]->name, name))
			return builtin_fabrics[i];
	return NULL;
}

int pc_fabric_open(const char *name, const struct pc_fabric_params *p, struct pc_fabric **out)
{
	const struct pc_fabric_ops *ops = pc_fabric_find(name);
	struct pc_fabric_params q;

	if (!ops)
		return -ENOENT;
	if (!p || p->size < sizeof(*p))
		return -EINVAL;
	q = *p;
	if (!q.env)
		q.env = pc_env_posix();
	return pc_fabric_open_ops(ops, &q, out);
}

int pc_storage_open(const char *name, const struct pc_storage_params *p, struct pc_storage **out)
{
	struct pc_storage_params q;

	if (!p || p->size < sizeof(*p))
		return -EINVAL;
	q = *p;
	if (!q.env)
		q.env = pc_env_posix();
	for (size_t i = 0; name && builtin_storages[i]; i++)
		if (!strcmp(builtin_storages[i]->name, name))
			return pc_storage_open_ops(builtin_storages[i], &q, out);
	return -ENOENT;
}

int builtin_open_fabric(const char *name, const struct pc_fabric_params *p, struct pc_fabric **out,
			char *err, size_t errlen)
{
	static const char *const by_proto[] = { [PC_PROTO_TCP] = "tcp", [PC_PROTO_RDMA] = "verbs",
						[PC_PROTO_RXE] = "rxe" };
	const struct pc_store_cfg *cfg = &p->topo->store;
	const char *want = name ? name : by_proto[cfg->protocol];
	bool none = cfg->fallback == PC_FALLBACK_NONE;
	int ret = pc_fabric_open(want, p, out);

	if (!ret)
		return 0;
	if (name || !strcmp(want, "tcp") || none) {
		snprintf(err, errlen, "%s: fabric '%s': %s%s", p->topo->source, want,
			 ret == -ENOENT ? "not built into this library" : strerror(-ret),
			 none && !name ? " (store.fallback is none; set it to tcp to run without RDMA)" :
					 "");
		return ret;
	}
	pc_warn("protocol %s: %s; falling back to tcp", cfg->protocol == PC_PROTO_RXE ? "rxe" : "rdma",
		ret == -ENOENT ? "no RDMA backend in this build" :
		ret == -ENODEV ? "no usable RDMA device" : strerror(-ret));
	ret = pc_fabric_open("tcp", p, out);
	if (ret)
		snprintf(err, errlen, "%s: fabric tcp: %s", p->topo->source, strerror(-ret));
	return ret;
}

int builtin_store_open(const struct pc_store_opts *o, const struct store_deps *d,
		       struct pc_store **out)
{
	struct store_deps full = d ? *d : (struct store_deps){ 0 };

	if (!full.env)
		full.env = pc_env_posix();
	if (!full.storage)
		full.storage = &posix_storage_ops;
	if (!full.open_fabric)
		full.open_fabric = builtin_open_fabric;
#if PC_ETCD
	if (!full.registry)
		full.registry = &etcd_registry_ops;
#endif
	return store_open(o, &full, out);
}

int pc_store_open(const struct pc_store_opts *o, struct pc_store **out)
{
	return builtin_store_open(o, NULL, out);
}
