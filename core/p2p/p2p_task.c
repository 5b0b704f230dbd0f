/*
 * p2p_task.c - p2p mode's background jobs: started on the store's env, joined when
 * they ended (at the next start, or at close), and a nap that ends early when the
 * store closes.
 */
#include "p2p_int.h"

/* Sleep ms milliseconds in short steps; false when the store started closing. */
bool p2p_nap(struct p2p *p, uint32_t ms)
{
	for (uint32_t t = 0; t < ms; t += 50) {
		if (__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE))
			return false;
		pc_env_sleep(p->st->env, 50 * 1000000ULL);
	}
	return !__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE);
}

static void run_job(void *arg)
{
	struct p2p_job *j = arg;
	unsigned pass = store_ring_enter(j->p->st);

	j->fn(j);
	store_ring_exit(j->p->st, pass);
	ring_destroy(j->old);	/* the job's hold on the ring it was started with */
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
}

/* Start a job in the background (the ring changes from event context in the
 * simulator, where nothing may block), joining the jobs that ended first. A job that
 * cannot start is said, unless it is best effort (quiet). */
bool p2p_spawn(struct p2p *p, const char *name, void (*fn)(struct p2p_job *), struct ring *old,
		  uint32_t node, bool quiet)
{
	struct p2p_job *j = calloc(1, sizeof(*j));
	int ret = j ? 0 : -ENOMEM;
	uint32_t keep = 0;

	pthread_mutex_lock(&p->tasks_lock);
	/* Closing: p2p_close walks the jobs without the lock from here on, so the
	 * array is not touched (a job that ended is joined there). */
	if (p->closing) {
		pthread_mutex_unlock(&p->tasks_lock);
		free(j);
		return false;
	}
	for (uint32_t i = 0; i < p->nr_jobs; i++) {
		if (__atomic_load_n(&p->jobs[i]->done, __ATOMIC_ACQUIRE)) {
			pc_env_join(p->st->env, p->jobs[i]->task);
			free(p->jobs[i]);
		} else {
			p->jobs[keep++] = p->jobs[i];
		}
	}
	p->nr_jobs = keep;
	if (!ret && p->nr_jobs == MAX_JOBS)
		ret = -EBUSY;
	if (!ret) {
		*j = (struct p2p_job){ .p = p, .fn = fn, .old = old ? ring_ref(old) : NULL,
				       .node = node };
		ret = pc_env_spawn(p->st->env, name, run_job, j, &j->task);
		if (!ret)
			p->jobs[p->nr_jobs++] = j;
		else
			ring_destroy(j->old);
	}
	pthread_mutex_unlock(&p->tasks_lock);
	if (ret) {
		free(j);
		if (!quiet)
			pc_warn("p2p: cannot start %s (%s): directory entries stay where they are", name,
				strerror(-ret));
	}
	return !ret;
}
