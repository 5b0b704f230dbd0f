/*
 * builtin.h - the backends this build holds, in one explicit list, and the store
 * they open: pc_store_open() is the core's store_open() on the posix env, the posix
 * storage and a fabric chosen by the topology's protocol. Adding a backend means
 * adding its table here and in builtin.c, nowhere else.
 *
 * Not for: the core, which never includes this file (it knows backends only by
 * their ops tables, handed to it).
 */
#ifndef PC_BUILTIN_H
#define PC_BUILTIN_H

#include <peercache/pc_env.h>
#include <peercache/pc_fabric.h>
#include <peercache/pc_storage.h>

#include "pc_build.h"
#include "store.h"

extern const struct pc_fabric_ops inproc_fabric_ops;
#if PC_BACKEND_TCP
extern const struct pc_fabric_ops tcp_fabric_ops;
#endif
#if PC_BACKEND_VERBS
extern const struct pc_fabric_ops verbs_fabric_ops;
#endif
#if PC_BACKEND_RXE
extern const struct pc_fabric_ops rxe_fabric_ops;
#endif
extern const struct pc_storage_ops posix_storage_ops;
/* The membership registry of store.discovery etcd (etcd/etcd.c). */
extern const struct registry_ops etcd_registry_ops;

extern const struct pc_fabric_ops *const builtin_fabrics[];
extern const struct pc_storage_ops *const builtin_storages[];

/*
 * The fabric for a topology: by backend name when name is given ("tcp", "verbs",
 * "rxe", "inproc"), else the one store.protocol names ("tcp", "rdma" = verbs, "rxe"),
 * falling back to tcp with a warning line when this build or machine has no RDMA
 * device and store.fallback allows it. 0, or -errno with a one-line reason in err.
 */
int builtin_open_fabric(const char *name, const struct pc_fabric_params *p, struct pc_fabric **out,
			char *err, size_t errlen);

/* store_open() with the built-in backends wherever d leaves a slot NULL (d may be
 * NULL): the posix env, the posix storage, builtin_open_fabric. */
int builtin_store_open(const struct pc_store_opts *o, const struct store_deps *d,
		       struct pc_store **out);

#endif
