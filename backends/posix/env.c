/*
 * env.c - the real clock: CLOCK_MONOTONIC, pthreads, and a per-thread xoshiro256**
 * generator seeded from getrandom(). Not for simulations (sim/ has its own env).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <stdio.h>
#include <time.h>

#include <peercache/pc_env.h>

struct pc_task {
	pthread_t thread;
	pc_task_fn *fn;
	void *arg;
	char name[16];
};

static uint64_t posix_now_ns(struct pc_env *c)
{
	struct timespec ts;

	(void)c;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void posix_sleep_ns(struct pc_env *c, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	(void)c;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t posix_random(struct pc_env *c)
{
	static __thread uint64_t s[4];
	static __thread int seeded;
	uint64_t r, t;

	(void)c;
	if (!seeded) {
		if (getrandom(s, sizeof(s), 0) != sizeof(s)) {
			/* No entropy source: still distinct per thread and run. */
			s[0] = (uint64_t)(uintptr_t)&s ^ posix_now_ns(NULL);
			s[1] = 0x9E3779B97F4A7C15ULL;
			s[2] = (uint64_t)pthread_self();
			s[3] = 0xD1B54A32D192ED03ULL;
		}
		seeded = 1;
	}
	r = rotl(s[1] * 5, 7) * 9;
	t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

static void *task_main(void *p)
{
	struct pc_task *t = p;

	pthread_setname_np(pthread_self(), t->name);
	t->fn(t->arg);
	return NULL;
}

static int posix_spawn_task(struct pc_env *c, const char *name, pc_task_fn *fn, void *arg,
			    struct pc_task **out)
{
	struct pc_task *t = calloc(1, sizeof(*t));
	int ret;

	(void)c;
	if (!t)
		return -ENOMEM;
	t->fn = fn;
	t->arg = arg;
	snprintf(t->name, sizeof(t->name), "%s", name);
	ret = pthread_create(&t->thread, NULL, task_main, t);
	if (ret) {
		free(t);
		return -ret;
	}
	*out = t;
	return 0;
}

static void posix_join(struct pc_env *c, struct pc_task *t)
{
	(void)c;
	pthread_join(t->thread, NULL);
	free(t);
}

static void posix_copy(struct pc_env *c, uint64_t bytes)
{
	(void)c;	/* the copy took the real time it took */
	(void)bytes;
}

static void posix_yield(struct pc_env *c)
{
	(void)c;
	sched_yield();
}

static const struct pc_env_ops posix_env_ops = {
	.size = sizeof(struct pc_env_ops),
	.name = "posix",
	.now_ns = posix_now_ns,
	.sleep_ns = posix_sleep_ns,
	.random = posix_random,
	.spawn = posix_spawn_task,
	.join = posix_join,
	.copy = posix_copy,
	.yield = posix_yield,
};

static struct pc_env posix_env = { .ops = &posix_env_ops };

struct pc_env *pc_env_posix(void)
{
	return &posix_env;
}
