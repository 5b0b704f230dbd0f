/*
 * fuzz_rpc_client.c - libFuzzer target: every RPC response decoder, as a caller runs
 * it: a real node's get (spill promote answers; in p2p mode directory answers), its
 * exists, its tier offer/query/put/fetch/stats calls, each answered by the input;
 * and the slot layout decoder (sm_layout_decode) alone.
 *
 * The caller's fabric is wrapped by an ops table whose call() answers every RPC but
 * LAYOUT with the input's bytes (LAYOUT goes to the real peer, so that a get gets as
 * far as asking about its misses). A response that decodes sends the caller on to
 * one-sided ops at whatever the answer named; the in-process fabric checks those
 * against the peers' region tables as a real one would.
 *
 * Input: byte 0 picks the call, byte 1 how many keys or blocks (1-8), then the
 * response body.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/peercache.h>

#include "fuzz_world.h"
#include "proto.h"
#include "slotmap/slotmap_layout.h"

#define REOPEN_EVERY 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The answer of the run in progress (background tasks of a store may call too). */
static pthread_mutex_t answer_lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *answer;
static size_t answer_len;

struct answering {
	struct pc_fabric *f;
	const struct pc_fabric_ops *inner;
	struct pc_fabric_ops ops;
};

static struct answering wrapped[2];

static const struct pc_fabric_ops *inner_of(struct pc_fabric *f)
{
	for (int i = 0; i < 2; i++)
		if (wrapped[i].f == f)
			return wrapped[i].inner;
	abort();
}

static int answer_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct pc_rpc *r = &rpcs[i];

		if (r->opcode == PC_RPC_LAYOUT) {
			int ret = inner_of(f)->call(f, r, 1);

			if (ret)
				return ret;
			continue;
		}
		r->resp = (struct pc_msg){ 0 };
		pthread_mutex_lock(&answer_lock);
		r->status = answer ? pc_msg_append(&r->resp, answer, answer_len) : -ETIMEDOUT;
		pthread_mutex_unlock(&answer_lock);
	}
	return 0;
}

static void wrap(int i, struct pc_fabric *f)
{
	wrapped[i].f = f;
	wrapped[i].inner = f->ops;
	wrapped[i].ops = *f->ops;
	wrapped[i].ops.call = answer_call;
	f->ops = &wrapped[i].ops;
}

static void unwrap(int i)
{
	if (wrapped[i].f)
		wrapped[i].f->ops = wrapped[i].inner;
	wrapped[i].f = NULL;
}

static void pages(struct pc_page *pg, uint8_t (*buf)[4096], char (*keys)[16], size_t n, bool set)
{
	for (size_t i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]), .data = buf[i],
					  .len = set ? 1000 : 0, .cap = 4096 };
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_world *worlds[2];
	static unsigned long runs;
	static uint8_t buf[8][4096];
	char keys[8][16];
	struct pc_page pg[8];
	struct pc_block blk[8];
	uint64_t hashes[8];
	uint8_t where[8];
	bool wanted[8];
	struct pc_tier_metrics tm = { .size = sizeof(tm) };
	struct pc_store *s;
	size_t n;

	if (size < 2)
		return 0;
	if (runs++ % REOPEN_EVERY == 0) {
		for (int i = 0; i < 2; i++) {
			unwrap(i);
			fuzz_world_down(worlds[i]);
			worlds[i] = fuzz_world_up(i);
			if (!worlds[i])
				abort();
			wrap(i, worlds[i]->s[1]->svc.fabric);
		}
	}
	n = data[1] % 8 + 1;
	pthread_mutex_lock(&answer_lock);
	answer = data + 2;
	answer_len = size - 2;
	pthread_mutex_unlock(&answer_lock);
	s = worlds[data[0] & 1]->s[1];
	for (size_t i = 0; i < n; i++) {
		hashes[i] = 0x9E3779B97F4A7C15ULL * (i + 1);
		blk[i] = (struct pc_block){ .hash = hashes[i], .data = buf[i], .len = i * 500, .cap = 4096 };
	}
	switch ((data[0] >> 1) % 8) {
	case 0:
		pages(pg, buf, keys, n, false);
		pc_batch_get(s, pg, n);
		break;
	case 1:
		pages(pg, buf, keys, n, false);
		pc_batch_exists(s, pg, n);
		break;
	case 2:
		pc_tier_offer(s, "n0", hashes, n, wanted);
		break;
	case 3:
		pc_tier_query(s, "n0", hashes, n, where);
		break;
	case 4:
		pc_tier_put(s, "n0", blk, n);
		break;
	case 5:
		pc_tier_fetch(s, "n0", blk, n);
		break;
	case 6:
		pc_tier_node_metrics(s, "n2", &tm);
		break;
	default: {
		struct pc_msg m = { .len = size - 2 };
		struct sm_layout *lay = NULL;

		m.data = malloc(m.len ? m.len : 1);
		if (!m.data)
			break;
		memcpy(m.data, data + 2, m.len);
		if (!sm_layout_decode(&m, data[1] % 4, PC_READ_AUTO, &lay))
			free(lay);
		free(m.data);
	}
	}
	pthread_mutex_lock(&answer_lock);
	answer = NULL;
	pthread_mutex_unlock(&answer_lock);
	return 0;
}
