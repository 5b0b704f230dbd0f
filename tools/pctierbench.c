/*
 * pctierbench - the disk tier against the disk it runs on, in one run.
 *
 *   pctierbench [--dir DIR] [--block BYTES] [--blocks N] [--batch B] [--rounds R]
 *
 * 1. raw: sequential O_DIRECT writes and reads of an unlinked file in DIR, 4 MiB a
 *    call one call at a time, and in the pool's batches (a block a transfer, a batch
 *    in flight at once): the better of the two is what the disk does at best (the
 *    reference; a virtual disk may prefer either);
 *    and reads of single blocks at random offsets, a batch at a time through the
 *    storage ops (the reference for promotion in random order: the same I/O without
 *    the pool).
 * 2. demote / promote: the disk pool writing and reading back N blocks in batches of
 *    B (with checksums, bounce buffers where needed, metadata), as GB/s and as a ratio
 *    of raw; promotion both in the order blocks were written and in random order.
 * 3. the share of each phase spent computing checksums.
 * 4. the tiered pool itself (8 host + 64 disk blocks, as in the seed): the latency of
 *    a fetch that promotes 4 blocks, next to the seed's 44 ms.
 *
 * 1 and 2 run in rounds, each a raw pass and a pool pass, raw first in even rounds
 * and pool first in odd ones; a figure is its best round, a ratio the median of the
 * rounds' own ratios: a shared disk's speed can move within a minute, and a raw
 * figure measured once, before the pool's (or the one fast round of either), would
 * decide the ratios by that drift. The order alternates because a virtual disk may
 * absorb a burst of writes and make whoever writes next pay for flushing it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_storage.h>

#include "inproc/inproc.h"
#include "builtin.h"
#include "store.h"
#include "tier/disk.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"

#define RAW_CHUNK (4u << 20)	/* raw, one call at a time */

static const char *const synopsis[] = {
	"--dir DIR [--block SIZE] [--blocks N] [--batch N] [--rounds N]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--dir DIR", NULL,
	  "The directory on the disk to measure; the unlinked test files (blocks x block bytes, "
	  "about 200 MB by default) vanish when pctierbench exits. Required." },
	{ "--block SIZE", "12288", "Block size (12KiB, 2MiB ...)." },
	{ "--blocks N", "16384", "Blocks written and read per phase." },
	{ "--batch N", "64", "Blocks per demote or promote batch." },
	{ "--rounds N", "3", "Rounds, each a raw pass and a pool pass (raw first in even rounds, pool "
			    "first in odd ones); a figure is its best round, a ratio the median of the "
			    "rounds' own." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pctierbench --dir /var/tmp", "12 KiB blocks in batches of 64" },
	{ "pctierbench --dir /var/tmp --block 2MiB --blocks 512 --batch 16 --rounds 2",
	  "2 MiB blocks (Llama-3.1-8B pages of 16 tokens)" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pctierbench",
	.summary = "the disk tier against the disk it runs on, in one run",
	.synopsis = synopsis,
	.description =
		"1. raw: sequential O_DIRECT writes and reads of an unlinked file in DIR, 4 MiB a "
		"call one at a time and in the pool's batches, a batch in flight at once (the better "
		"of the two: what the disk does at best), and single blocks read at random offsets a "
		"batch at a time (the reference for promotion in random order).\n"
		"2. demote / promote: the disk pool writing and reading back the blocks in batches "
		"(checksums, bounce buffers, metadata), as GB/s and as a ratio of raw; promotion in "
		"write order and in random order.\n"
		"3. the share of each phase spent computing checksums.\n"
		"1 and 2 run in interleaved rounds (raw then pool, pool then raw, ...); a figure is its "
		"best round, a ratio the median of the rounds' own ratios.\n"
		"4. the tiered pool itself (8 host + 64 disk blocks, as in the KVBM G3 seed): the "
		"latency of a fetch that promotes 4 blocks.",
	.opts = options,
	.examples = examples,
	.exit_status = "0 after a complete run; 2 for a bad flag or a DIR that cannot hold the "
		       "files (one line naming it).",
	.see_also = "pcd(1); docs/performance.md",
	.needs_args = true,
};

struct opts {
	const char *dir;
	uint32_t block, blocks, batch, rounds;
};

static struct pc_storage *open_file(const struct opts *o, uint64_t bytes)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = o->dir, .bytes = bytes, .direct = true };
	struct pc_storage *s;
	int ret = pc_storage_open("posix", &p, &s);

	if (ret)
		tool_die("pctierbench", "--dir %s: %s", o->dir, strerror(-ret));
	return s;
}

/* Each figure of each round; a figure is printed as its best round, a ratio as the
 * median of the rounds' own ratios (raw and pool passes of a round run back to back:
 * the disk's drift over a run, or one fast round of the raw file, decides none). */
enum { RAW_WRITE, RAW_READ, RAW_RANDOM, POOL_PUT, POOL_GET_SEQ, POOL_GET_RANDOM,
       RAW_WRITE_ONE, RAW_READ_ONE, RAW_WRITE_BATCHED, RAW_READ_BATCHED, NR_FIGS };

struct figs {
	uint32_t rounds, r;		/* rounds in all; the one running */
	double *gbs;			/* [fig * rounds + round] */
	double best[NR_FIGS];
	double sums[NR_FIGS];		/* pool: share of its best round spent on checksums */
	double batch_ms[NR_FIGS];	/* pool: per batch in its best round */
};

static void keep(struct figs *f, int fig, double gbs, double sums, double batch_ms)
{
	f->gbs[fig * f->rounds + f->r] = gbs;
	if (gbs <= f->best[fig])
		return;
	f->best[fig] = gbs;
	f->sums[fig] = sums;
	f->batch_ms[fig] = batch_ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over the rounds of fig / ref within each round. */
static double median_ratio(const struct figs *f, int fig, int ref)
{
	double *v = malloc(f->rounds * sizeof(*v)), m;

	if (!v)
		tool_die("pctierbench", "out of memory");
	for (uint32_t r = 0; r < f->rounds; r++)
		v[r] = f->gbs[fig * f->rounds + r] / f->gbs[ref * f->rounds + r];
	qsort(v, f->rounds, sizeof(v[0]), cmp_double);
	m = f->rounds % 2 ? v[f->rounds / 2] : (v[f->rounds / 2 - 1] + v[f->rounds / 2]) / 2;
	free(v);
	return m;
}

/* Blocks at random places, o->batch per storage call, as many bytes as a pool pass
 * moves. GB/s. */
static double raw_random_read(const struct opts *o, struct pc_storage *s, uint8_t *buf,
			      struct pc_io *io)
{
	uint64_t stride = ((uint64_t)o->block + 4095) / 4096 * 4096, nblk = s->bytes / stride;
	double t0 = tool_now();

	for (uint64_t done = 0; done < o->blocks; done += o->batch) {
		uint32_t n = o->blocks - done < o->batch ? (uint32_t)(o->blocks - done) : o->batch;

		for (uint32_t k = 0; k < n; k++)
			io[k] = (struct pc_io){ .off = ((uint64_t)rand() % nblk) * stride,
						.buf = buf + k * stride, .len = stride };
		if (pc_storage_read(s, io, n))
			tool_die("pctierbench", "raw random read failed");
	}
	return (double)o->blocks * o->block / (tool_now() - t0) / 1e9;
}

/* The better of two figures in the running round. */
static double better(const struct figs *f, int a, int b)
{
	double x = f->gbs[a * f->rounds + f->r], y = f->gbs[b * f->rounds + f->r];

	return x > y ? x : y;
}

/* The raw passes' landed and prepare callback: nothing to do per transfer. */
static void no_work(void *arg, struct pc_io *ios, size_t i)
{
	(void)arg, (void)ios, (void)i;
}

/* The whole file written (or read) in order, n transfers of per bytes a call from
 * buf: RAW_CHUNK one call at a time, or (batched) the pool's batches, a block a
 * transfer, which the storage has in flight at once as it has the pool's (its AIO
 * path: a prepared write or landed read). GB/s. */
static double raw_pass(struct pc_storage *s, uint8_t *buf, bool write, size_t per, size_t n,
		       struct pc_io *io)
{
	double t0 = tool_now();

	for (uint64_t off = 0; off < s->bytes;) {
		size_t k = 0;
		int ret;

		for (; k < n && off < s->bytes; k++, off += io[k - 1].len)
			io[k] = (struct pc_io){ .off = off, .buf = buf + k * per,
						.len = s->bytes - off < per ? s->bytes - off : per };
		ret = write ? pc_storage_write_prepared(s, io, k, no_work, NULL) :
		      pc_storage_read_landed(s, io, k, no_work, NULL);
		for (size_t i = 0; !ret && i < k; i++)
			ret = io[i].status;
		if (ret)
			tool_die("pctierbench", "raw %s failed: %s", write ? "write" : "read", strerror(-ret));
	}
	return (double)s->bytes / (tool_now() - t0) / 1e9;
}

/* One raw pass: the whole file written then read one call at a time, then again in
 * the pool's batches (the better of the two is the round's reference), then random
 * block reads of it. */
static void raw_round(const struct opts *o, struct pc_storage *s, uint8_t *chunk, uint8_t *blocks,
		      struct pc_io *ios, struct figs *f)
{
	size_t stride = ((size_t)o->block + 4095) / 4096 * 4096;

	for (int b = 0; b < 2; b++) {
		size_t per = b ? stride : RAW_CHUNK, n = b ? o->batch : 1;
		uint8_t *buf = b ? blocks : chunk;
		double w = raw_pass(s, buf, true, per, n, ios), r = raw_pass(s, buf, false, per, n, ios);

		keep(f, b ? RAW_WRITE_BATCHED : RAW_WRITE_ONE, w, 0, 0);
		keep(f, b ? RAW_READ_BATCHED : RAW_READ_ONE, r, 0, 0);
	}
	keep(f, RAW_WRITE, better(f, RAW_WRITE_ONE, RAW_WRITE_BATCHED), 0, 0);
	keep(f, RAW_READ, better(f, RAW_READ_ONE, RAW_READ_BATCHED), 0, 0);
	keep(f, RAW_RANDOM, raw_random_read(o, s, blocks, ios), 0, 0);
}

static void shuffle(uint32_t *v, uint32_t n)
{
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rand() % (i + 1), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

static struct pc_keyhash key(uint32_t i)
{
	return keyhash_of(&i, sizeof(i));
}

/* One pool pass: put every block, get them back in write order, then shuffled. */
static void pool_round(const struct opts *o, struct disk_pool *d, uint8_t *host, struct disk_blk *b,
		       uint32_t *order, struct figs *f)
{
	uint64_t stride = ((uint64_t)o->block + 4095) / 4096 * 4096;
	uint32_t batches = (o->blocks + o->batch - 1) / o->batch;
	static const char *const name[] = { "demote", "promote in write order",
					    "promote in random order" };

	for (int phase = 0; phase < 3; phase++) {
		struct disk_stats st0, st1;
		double t0, el;
		int ret;

		for (uint32_t i = 0; i < o->blocks; i++)
			order[i] = i;
		if (phase == 2)
			shuffle(order, o->blocks);
		disk_get_stats(d, &st0);
		t0 = tool_now();
		for (uint32_t i = 0; i < o->blocks; i += o->batch) {
			uint32_t n = o->blocks - i < o->batch ? o->blocks - i : o->batch;

			for (uint32_t k = 0; k < n; k++)
				b[k] = (struct disk_blk){ .key = key(order[i + k]), .data = host + k * stride,
							  .len = o->block, .cap = o->block };
			ret = phase ? disk_get(d, b, n, false) : disk_put(d, b, n);
			if (ret != (int)n)
				tool_die("pctierbench", "%s: %d of %u blocks (status %d)", name[phase], ret, n,
					 b[0].status);
		}
		el = tool_now() - t0;
		disk_get_stats(d, &st1);
		keep(f, POOL_PUT + phase, (double)o->blocks * o->block / el / 1e9,
		     (double)(st1.sum_ns - st0.sum_ns) / (el * 1e9), el * 1e3 / batches);
	}
}

/* The rounds, raw first then pool first; the table of the best of each figure. */
static void measure(const struct opts *o)
{
	uint64_t bytes = disk_file_bytes(o->blocks, o->block, 4096);
	uint64_t stride = ((uint64_t)o->block + 4095) / 4096 * 4096;
	struct pc_storage *raw = open_file(o, bytes), *s = open_file(o, bytes);
	uint8_t *chunk = aligned_alloc(4096, RAW_CHUNK), *host = aligned_alloc(4096, stride * o->batch);
	struct pc_io *ios = calloc(o->batch, sizeof(*ios));
	struct disk_blk *b = calloc(o->batch, sizeof(*b));
	uint32_t *order = malloc(o->blocks * sizeof(*order));
	struct figs f = { .rounds = o->rounds, .gbs = calloc((size_t)NR_FIGS * o->rounds, sizeof(double)) };
	static const char *const name[] = { "demote (disk_put)", "promote, write order",
					    "promote, random order" };
	struct disk_pool *d;
	int ret;

	if (!chunk || !host || !ios || !b || !order || !f.gbs)
		tool_die("pctierbench", "out of memory");
	ret = disk_open(s, o->blocks, o->block, false, &d);
	if (ret)
		tool_die("pctierbench", "disk pool: %s", strerror(-ret));
	memset(chunk, 0x5a, RAW_CHUNK);
	for (uint32_t i = 0; i < o->batch; i++)
		for (uint64_t k = 0; k < o->block; k++)
			host[i * stride + k] = (uint8_t)(k * 31 + i);
	for (f.r = 0; f.r < o->rounds; f.r++) {
		if (f.r % 2)
			pool_round(o, d, host, b, order, &f);
		raw_round(o, raw, chunk, host, ios, &f);
		if (!(f.r % 2))
			pool_round(o, d, host, b, order, &f);
	}
	if (!raw->direct)
		printf("note: %s has no O_DIRECT here; the page cache flatters every number\n", o->dir);
	printf("pctierbench: %u blocks of %u B in batches of %u, %s; %u interleaved rounds: GB/s of the best, "
	       "vs raw the median of the rounds' own ratios\n", o->blocks, o->block, o->batch, o->dir, o->rounds);
	printf("%-28s %10.2f   (%u KiB a call: %.2f; batches of %u blocks in flight: %.2f)\n",
	       "raw sequential write", f.best[RAW_WRITE], RAW_CHUNK >> 10, f.best[RAW_WRITE_ONE], o->batch,
	       f.best[RAW_WRITE_BATCHED]);
	printf("%-28s %10.2f   (%u KiB a call: %.2f; batches of %u blocks in flight: %.2f)\n",
	       "raw sequential read", f.best[RAW_READ], RAW_CHUNK >> 10, f.best[RAW_READ_ONE], o->batch,
	       f.best[RAW_READ_BATCHED]);
	printf("%-28s %10.2f\n", "raw random block reads", f.best[RAW_RANDOM]);
	printf("%-28s %10s %8s %10s %12s\n", "", "GB/s", "vs raw", "checksums", "per batch");
	for (int phase = 0; phase < 3; phase++) {
		int fig = POOL_PUT + phase;

		printf("%-28s %10.2f %8.2f %9.1f%% %9.2f ms", name[phase], f.best[fig],
		       median_ratio(&f, fig, phase ? RAW_READ : RAW_WRITE), 100.0 * f.sums[fig],
		       f.batch_ms[fig]);
		if (phase == 2)
			printf("   (%.2f of raw random reads)", median_ratio(&f, fig, RAW_RANDOM));
		printf("\n");
	}
	printf("vs raw by round (pool first in odd rounds):");
	for (uint32_t r = 0; r < f.rounds; r++)
		printf(" %.2f/%.2f", f.gbs[POOL_PUT * f.rounds + r] / f.gbs[RAW_WRITE * f.rounds + r],
		       f.gbs[POOL_GET_SEQ * f.rounds + r] / f.gbs[RAW_READ * f.rounds + r]);
	printf(" (demote/promote in write order)\n");
	disk_close(d);
	pc_storage_close(s);
	pc_storage_close(raw);
	free(chunk);
	free(host);
	free(ios);
	free(b);
	free(order);
	free(f.gbs);
}

/* The seed's peer: 8 host + 64 disk blocks; fetching 4 disk-resident blocks demotes
 * 4 others and promotes the 4. The fetch's promotion latency, over many rounds. */
static void seed_latency(const struct opts *o)
{
	char text[1024], err[PC_ERR_MAX] = "";
	struct pc_topology *t = NULL;
	struct inproc_world *w = inproc_world_create(2);
	struct pc_store *peer = NULL, *client = NULL;
	struct pc_store_opts so = { .size = sizeof(so), .fabric = "inproc", .err = err,
				    .errlen = sizeof(err) };
	struct store_deps ext = { .backend_arg = w };
	uint8_t *buf = aligned_alloc(4096, 8 * (size_t)o->block);
	struct pc_block blk[8];
	struct pc_tier_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	double *lat = calloc(o->rounds * 40 + 4, sizeof(*lat));
	int nlat = 0;

	snprintf(text, sizeof(text),
		 "store: {global_segment_size: %uKiB, slot_size_classes: [%uKiB], tier_block_bytes: %u, tier_host_blocks: 8, tier_disk_blocks: 64, tier_free_percent: 0}\n"
		 "node_defaults: {address: 127.0.0.1, nvme: {path: %s}}\n"
		 "nodes:\n  - {name: p, port: 40000}\n  - {name: c, port: 40001}\n",
		 8 * ((o->block + 1023) / 1024 + 1), (o->block + 1023) / 1024, o->block, o->dir);
	if (pc_topology_parse(text, strlen(text), "seed", &t, err, sizeof(err)))
		tool_die("pctierbench", "%s", err);
	so.topo = t;
	so.node = "p";
	if (builtin_store_open(&so, &ext, &peer))
		tool_die("pctierbench", "%s", err);
	so.node = "c";
	if (builtin_store_open(&so, &ext, &client))
		tool_die("pctierbench", "%s", err);
	memset(buf, 7, 8 * (size_t)o->block);
	/* sets 0..15 of 4 blocks: after the first two, every fetch of an old set
	 * promotes 4 blocks and demotes 4 */
	for (uint32_t set = 0; set < 16; set++) {
		for (uint32_t k = 0; k < 4; k++)
			blk[k] = (struct pc_block){ .hash = set * 4 + k + 1, .data = buf + k * (size_t)o->block,
						    .len = o->block };
		pc_tier_put(client, "p", blk, 4);
	}
	for (uint32_t r = 0; r < o->rounds * 40; r++) {
		uint32_t set = (uint32_t)rand() % 14;	/* never the two on host */

		for (uint32_t k = 0; k < 4; k++)
			blk[k] = (struct pc_block){ .hash = set * 4 + k + 1, .data = buf + k * (size_t)o->block,
						    .cap = o->block };
		pc_tier_metrics(peer, &m0);
		if (pc_tier_fetch(client, "p", blk, 4) != 4)
			tool_die("pctierbench", "seed fetch: a block missed");
		pc_tier_metrics(peer, &m1);
		if (m1.promote_batches == m0.promote_batches + 1 &&
		    m1.promoted_blocks == m0.promoted_blocks + 4)
			lat[nlat++] = (double)(m1.promote_ns - m0.promote_ns) / 1e6;
	}
	if (nlat) {
		for (int i = 1; i < nlat; i++)
			for (int j = i; j > 0 && lat[j] < lat[j - 1]; j--) {
				double x = lat[j];

				lat[j] = lat[j - 1];
				lat[j - 1] = x;
			}
		printf("promote 4 blocks of %u B (demoting 4): p50 %.2f ms, p99 %.2f ms over %d fetches; the seed: 44 ms (%.0fx)\n",
		       o->block, lat[nlat / 2], lat[nlat * 99 / 100], nlat, 44.0 / lat[nlat / 2]);
	}
	pc_store_close(client);
	pc_store_close(peer);
	inproc_world_destroy(w);
	pc_topology_free(t);
	free(buf);
	free(lat);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "block", required_argument, NULL, 'b' },
		{ "blocks", required_argument, NULL, 'n' }, { "batch", required_argument, NULL, 'B' },
		{ "rounds", required_argument, NULL, 'r' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { .dir = NULL, .block = 12288, .blocks = 16384, .batch = 64, .rounds = 3 };
	int c;

	tool_std_flags(&doc, lopts, argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:b:n:B:r:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'b': o.block = (uint32_t)tool_size("pctierbench", "--block", optarg); break;
		case 'n': o.blocks = (uint32_t)tool_uint("pctierbench", "--blocks", optarg); break;
		case 'B': o.batch = (uint32_t)tool_uint("pctierbench", "--batch", optarg); break;
		case 'r': o.rounds = (uint32_t)tool_uint("pctierbench", "--rounds", optarg); break;
		default: tool_die("pctierbench", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die("pctierbench", "unexpected argument '%s'; see --help", argv[optind]);
	if (!o.dir)
		tool_die("pctierbench", "--dir DIR is required: the disk to measure (e.g. --dir /var/tmp)");
	tool_log_to_stderr("pctierbench");
	pc_log_set_level(PC_LOG_WARN);
	srand(1);
	measure(&o);
	seed_latency(&o);
	return 0;
}
