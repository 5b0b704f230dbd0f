/*
 * pc_storage.h - what a storage backend implements: one unlinked block file.
 *
 * The disk tier keeps its blocks in a file nobody else can open (O_TMPFILE, or
 * open+unlink) and does all I/O through these ops, so the simulator can replace the
 * file with an NVMe model and tests can inject EIO/ENOSPC. I/O is batched: one call
 * carries many block reads or writes, as the tier demotes and promotes in batches.
 *
 * Not for: anything remote. Disk is never remotely addressable; remote readers only
 * ever read registered host memory.
 */
#ifndef PC_STORAGE_H
#define PC_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pc_storage;
struct pc_env;

/* One block transfer. buf, off and len must be multiples of the file's alignment
 * (pc_storage.align) when the file is in direct-I/O mode. */
struct pc_io {
	uint64_t off;
	void *buf;
	size_t len;
	int status;		/* out: 0, or -errno for this transfer */
};

/* A transfer of a read_landed batch is in: its bytes are in ios[i].buf, or its
 * error in ios[i].status. Called once per transfer, in any order, on the calling
 * thread, before the read returns. */
typedef void (*pc_io_landed_fn)(void *arg, struct pc_io *ios, size_t i);

/* A transfer of a write_prepared batch is about to go out: the caller fills
 * ios[i].buf now (a copy into an aligned buffer, a checksum while the bytes are in
 * cache) while the transfers before it are in flight. Called once per transfer, in
 * order, on the calling thread, before the device reads ios[i].buf. */
typedef void (*pc_io_prepare_fn)(void *arg, struct pc_io *ios, size_t i);

struct pc_storage_params {
	uint32_t size;		/* sizeof(struct pc_storage_params) */
	const char *dir;	/* directory that holds the unlinked file */
	uint64_t bytes;		/* file size to reserve */
	bool direct;		/* ask for O_DIRECT; the backend falls back and says so */
	struct pc_env *env;	/* by name: NULL for the posix env; by ops: required */
	void *backend_arg;	/* backend-specific (the simulator's NVMe model) */
};

struct pc_storage_ops {
	uint32_t size;		/* sizeof(struct pc_storage_ops) the backend was built with */
	const char *name;
	size_t obj_size;	/* bytes the core allocates for the backend's object */
	/* Create the unlinked file. 0 or -errno; on error nothing is left to close. */
	int (*open)(struct pc_storage *s, const struct pc_storage_params *p);
	void (*close)(struct pc_storage *s);
	/* Run every transfer; 0 when all were attempted (see each status), or -errno. */
	int (*read)(struct pc_storage *s, struct pc_io *ios, size_t n);
	int (*write)(struct pc_storage *s, struct pc_io *ios, size_t n);
	/* read, calling landed for each transfer as it lands, so that the caller works on
	 * one (a checksum) while the others are in flight. Optional: without it the core
	 * runs read, then calls landed for every transfer. On -errno, landed may have
	 * run for some transfers. */
	int (*read_landed)(struct pc_storage *s, struct pc_io *ios, size_t n,
			   pc_io_landed_fn landed, void *arg);
	/* write, calling prepare for each transfer just before it goes out, so that the
	 * caller prepares one while the earlier ones are being written. Optional:
	 * without it the core prepares every transfer, then runs write. */
	int (*write_prepared)(struct pc_storage *s, struct pc_io *ios, size_t n,
			      pc_io_prepare_fn prepare, void *arg);
};

/* The base every storage backend embeds first. */
struct pc_storage {
	const struct pc_storage_ops *ops;	/* the backend's, stubs where it has none */
	struct pc_storage_ops full_ops;	/* what ops points to */
	struct pc_env *env;
	uint64_t bytes;		/* usable size */
	size_t align;		/* required alignment; 1 for buffered I/O */
	bool direct;		/* true when O_DIRECT is in effect */
};

/* Open a storage object of the built-in backend called name ("posix"). Slots the
 * backend leaves NULL (or that its table predates) answer -EOPNOTSUPP. */
PC_API int pc_storage_open(const char *name, const struct pc_storage_params *p,
		    struct pc_storage **out);
/* The same with an ops table the caller holds (the simulator). */
PC_API int pc_storage_open_ops(const struct pc_storage_ops *ops, const struct pc_storage_params *p,
			       struct pc_storage **out);
PC_API void pc_storage_close(struct pc_storage *s);

/* Batched I/O: arguments checked, statuses cleared, then the backend's op. */
PC_API int pc_storage_read(struct pc_storage *s, struct pc_io *ios, size_t n);
PC_API int pc_storage_write(struct pc_storage *s, struct pc_io *ios, size_t n);
PC_API int pc_storage_read_landed(struct pc_storage *s, struct pc_io *ios, size_t n,
				  pc_io_landed_fn landed, void *arg);
PC_API int pc_storage_write_prepared(struct pc_storage *s, struct pc_io *ios, size_t n,
				     pc_io_prepare_fn prepare, void *arg);

#ifdef __cplusplus
}
#endif
#endif
