/*
 * backends.c - the one explicit list of built-in backends (rdma-core and libfabric
 * keep theirs the same way). Order matters only for listings.
 */
#include <stddef.h>

#include "backends.h"

const struct pc_fabric_ops *const pc_builtin_fabrics[] = {
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

const struct pc_storage_ops *const pc_builtin_storages[] = {
	&posix_storage_ops,
	NULL,
};
