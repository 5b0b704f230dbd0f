/*
 * torture_test.c - writers and readers hammer one key space on a 3-node cluster (tcp,
 * or rxe in the Soft-RoCE VM) while peers are SIGKILLed and SIGSTOPped; every hit
 * is checked.
 *
 * Node n0 runs in this process, n1 and n2 are pcd processes. Writers set pages
 * through n0 (in place for n0's keys, remote for the others) and through a client
 * store (remote for all), so the same buckets take local and remote writes at once;
 * pages come in several sizes (three size classes), the working set is many times
 * the slots and the nodes spill to disk. A page carries the version it was written
 * with and bytes derived from key and version; a writer announces a version before
 * it writes it. A reader's hit is dirty when its length is not the key's, its bytes
 * are not those of the version it names, or no writer ever announced that version.
 *
 * Usage: torture_test PCD [READS [chaos|calm [PROTOCOL]]]: stop after READS reads
 * (default 1M); with "chaos", a peer is SIGSTOPped for 400 ms or SIGKILLed and
 * restarted every 1.5 s; PROTOCOL is the cluster's store.protocol (default tcp).
 * Prints the counts; fails on any dirty hit or when nothing hit at all.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cluster.h"
#include "testutil.h"

#define NKEYS 3000u
#define WRITERS 3
#define READERS 4
#define BATCH 16
#define MAX_PAGE 16384u
#define MAX_SECONDS 3600

static const uint32_t sizes[] = { 700, 2048, 3000, 8192, 12000, 16384 };

struct shared {
	struct pc_store *via[2];	/* n0, and a client */
	uint32_t issued[WRITERS];	/* the last version each writer announced */
	unsigned long target;
	volatile int stop;
	/* totals */
	unsigned long reads, hits, misses, errors, dirty, writes, write_fails;
	unsigned long stops, kills;
};

static uint32_t size_of(uint32_t k)
{
	return sizes[k % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void key_name(char *out, size_t cap, uint32_t k)
{
	snprintf(out, cap, "torture-%u", k);
}

/* version v of key k: v, then bytes from key and v */
static void make_page(uint8_t *p, uint32_t k, uint32_t v)
{
	char key[32];
	uint32_t len = size_of(k);
	uint64_t x;

	key_name(key, sizeof(key), k);
	x = XXH3_64bits(key, strlen(key)) ^ ((uint64_t)v << 17 | v);
	memcpy(p, &v, 4);
	for (uint32_t i = 4; i < len; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (uint8_t)(x >> 56);
	}
}

static bool page_clean(struct shared *S, const uint8_t *p, size_t len, uint32_t k)
{
	static __thread uint8_t want[MAX_PAGE];
	uint32_t v, w;

	if (len != size_of(k) || len < 4)
		return false;
	memcpy(&v, p, 4);
	w = v >> 24;
	if (w >= WRITERS || (v & 0xffffff) > __atomic_load_n(&S->issued[w], __ATOMIC_ACQUIRE))
		return false;	/* a version nobody wrote */
	make_page(want, k, v);
	return !memcmp(p, want, len);
}

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

struct worker {
	struct shared *S;
	int id;
	unsigned long n, ok, fails;
	unsigned long hits, misses, errors, dirty;
};

static void *writer_main(void *p)
{
	struct worker *W = p;
	struct shared *S = W->S;
	uint8_t *buf = malloc((size_t)BATCH * MAX_PAGE);
	char keys[BATCH][32];
	struct pc_page pg[BATCH];
	uint64_t seed = 0x9E3779B97F4A7C15ULL * (uint64_t)(W->id + 1);
	uint32_t seq = 0;

	while (buf && !S->stop) {
		for (int i = 0; i < BATCH / 2; i++) {
			uint32_t k = rnd(&seed) % NKEYS, v;

			/* announced before it is written: a reader may see it at once */
			v = (uint32_t)W->id << 24 | (++seq & 0xffffff);
			__atomic_store_n(&S->issued[W->id], seq & 0xffffff, __ATOMIC_RELEASE);
			make_page(buf + (size_t)i * MAX_PAGE, k, v);
			key_name(keys[i], sizeof(keys[i]), k);
			pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
						  .data = buf + (size_t)i * MAX_PAGE, .len = size_of(k) };
		}
		W->ok += (unsigned long)pc_batch_set(S->via[W->id & 1], pg, BATCH / 2);
		W->n += BATCH / 2;
		if (seq > 0xfff000)
			break;	/* the version space of this writer is spent */
	}
	W->fails = W->n - W->ok;
	free(buf);
	return NULL;
}

static void *reader_main(void *p)
{
	struct worker *W = p;
	struct shared *S = W->S;
	uint8_t *buf = malloc((size_t)BATCH * MAX_PAGE);
	char keys[BATCH][32];
	uint32_t ks[BATCH];
	struct pc_page pg[BATCH];
	uint64_t seed = 0xD1B54A32D192ED03ULL * (uint64_t)(W->id + 7);

	while (buf && !S->stop) {
		for (int i = 0; i < BATCH; i++) {
			ks[i] = rnd(&seed) % NKEYS;
			key_name(keys[i], sizeof(keys[i]), ks[i]);
			pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
						  .data = buf + (size_t)i * MAX_PAGE, .cap = MAX_PAGE };
		}
		pc_batch_get(S->via[W->id & 1], pg, BATCH);
		for (int i = 0; i < BATCH; i++) {
			if (!pg[i].status) {
				W->hits++;
				if (!page_clean(S, pg[i].data, pg[i].len, ks[i])) {
					W->dirty++;
					fprintf(stderr, "torture: DIRTY hit on %s (%zu bytes)\n", keys[i],
						pg[i].len);
				}
			} else if (pg[i].status == -ENOENT) {
				W->misses++;
			} else {
				W->errors++;
			}
		}
		W->n += BATCH;
		if (__atomic_add_fetch(&S->reads, BATCH, __ATOMIC_RELAXED) >= S->target)
			S->stop = 1;
	}
	free(buf);
	return NULL;
}

static void pause_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct chaos {
	struct shared *S;
	struct ecl *E;
};

/* Every 1.5 s a peer (n1, n2 in turn): two of three times SIGSTOPped for 400 ms,
 * else SIGKILLed and started again. */
static void *chaos_main(void *p)
{
	struct chaos *X = p;
	struct shared *S = X->S;
	unsigned event = 0;

	while (!S->stop) {
		uint32_t victim = 1 + event % 2;

		for (int i = 0; i < 15 && !S->stop; i++)
			pause_ms(100);
		if (S->stop)
			break;
		if (event++ % 3 != 2) {
			kill(X->E->pcd[victim], SIGSTOP);
			pause_ms(400);
			kill(X->E->pcd[victim], SIGCONT);
			S->stops++;
		} else {
			ecl_stop_pcd(X->E, victim, SIGKILL);
			X->E->pcd[victim] = ecl_spawn_pcd(X->E, victim);
			S->kills++;
			if (X->E->pcd[victim] <= 0) {
				fprintf(stderr, "torture: could not restart n%u\n", victim);
				S->stop = 1;
			}
		}
	}
	return NULL;
}

static void test_torture(void)
{
	const char *pcd = pc_test_argv[1];
	bool chaos = pc_test_argc > 3 && !strcmp(pc_test_argv[3], "chaos");
	struct shared S = { .target = pc_test_argc > 2 ? strtoul(pc_test_argv[2], NULL, 0) : 1000000 };
	const char *protocol = pc_test_argc > 4 ? pc_test_argv[4] : "tcp";
	struct ecl *E = ecl_up(pcd, protocol,
			       "slot_size_classes: [2KiB, 8KiB, 16KiB], slot_ways: 4, "
			       "global_segment_size: 3MiB, slot_spill_ways: 1, slot_cas_claim: true, "
			       "slot_claim_timeout_ms: 1500", true);
	pthread_t wt[WRITERS], rt[READERS], ct;
	struct worker w[WRITERS], r[READERS];
	struct chaos X = { .S = &S, .E = E };
	struct timespec t0, t1;
	double secs;

	S.via[0] = E->n0;
	S.via[1] = ecl_open_store(E, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(S.via[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct worker){ .S = &S, .id = i };
		pthread_create(&wt[i], NULL, writer_main, &w[i]);
	}
	for (int i = 0; i < READERS; i++) {
		r[i] = (struct worker){ .S = &S, .id = i };
		pthread_create(&rt[i], NULL, reader_main, &r[i]);
	}
	if (chaos)
		pthread_create(&ct, NULL, chaos_main, &X);
	for (int s = 0; s < MAX_SECONDS * 10 && !S.stop; s++)
		pause_ms(100);
	S.stop = 1;
	for (int i = 0; i < READERS; i++) {
		pthread_join(rt[i], NULL);
		S.hits += r[i].hits, S.misses += r[i].misses, S.errors += r[i].errors;
		S.dirty += r[i].dirty;
	}
	for (int i = 0; i < WRITERS; i++) {
		pthread_join(wt[i], NULL);
		S.writes += w[i].ok, S.write_fails += w[i].fails;
	}
	if (chaos)
		pthread_join(ct, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("\n  torture over %s: %lu reads in %.1f s (%.0f/s): %lu hits, %lu misses, %lu errors, "
	       "%lu DIRTY; %lu writes stored, %lu failed; %lu SIGSTOPs, %lu SIGKILLs\n",
	       protocol, S.reads, secs, (double)S.reads / secs, S.hits, S.misses, S.errors, S.dirty, S.writes,
	       S.write_fails, S.stops, S.kills);
	CU_ASSERT_EQUAL(S.dirty, 0);
	CU_ASSERT(S.hits > 0);
	CU_ASSERT(S.reads >= S.target);
	pc_store_close(S.via[1]);
	ecl_down(E);
}

static CU_TestInfo tests[] = {
	{ "writers and readers on 3 nodes, peers stopped and killed: no dirty hit", test_torture },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "torture", NULL, NULL, NULL, NULL, tests })
