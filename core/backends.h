/*
 * backends.h - the built-in backend list: every ops table this build holds.
 * Adding a backend means adding its table here and in backends.c, nowhere else.
 */
#ifndef PC_BACKENDS_H
#define PC_BACKENDS_H

#include <peercache/pc_fabric.h>
#include <peercache/pc_storage.h>

#include "pc_build.h"

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

extern const struct pc_fabric_ops *const pc_builtin_fabrics[];
extern const struct pc_storage_ops *const pc_builtin_storages[];

#endif
