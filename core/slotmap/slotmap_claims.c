/*
 * slotmap_claims.c - claims left in slots by writers that died, and taking them over.
 *
 * A CAS claim (slot.h: slot_claim_word) makes one writer own a slot until it commits.
 * A writer that dies, hangs or loses its peer between claim and commit would hold the
 * slot forever. Each node therefore remembers, for a while, the claims it found in
 * its way: the slot, the word and when it first saw it. Once it has seen the same
 * word in the same slot for store.slot_claim_timeout_ms it may take the claim over
 * (a CAS from that word), whatever the claimer's clock says, so nodes' clocks need
 * not agree. A claim that moves on (committed, taken over) never matches again.
 *
 * The watch list is a small set-associative table: a full set records nothing new
 * until one of its entries is older than twice the timeout (a stale watch), so every
 * stuck slot gets in eventually; a collision only delays a takeover.
 *
 * Not for: reading or writing slots (slot.c, slotmap_write.c).
 */
#include <stdlib.h>

#include "base/log.h"
#include "slotmap_int.h"

#define CLAIM_SETS 256u
#define CLAIM_WAYS 4u

struct claim_seen {
	uint64_t bucket;
	uint64_t where;		/* node << 32 | class << 16 | way << 1 | 1 (0: unused) */
	uint64_t word;
	uint64_t since_ns;
};

struct sm_claims {
	pthread_mutex_t lock;
	uint64_t timeout_ns;
	uint64_t taken;
	struct claim_seen e[CLAIM_SETS][CLAIM_WAYS];
};

int sm_claims_open(struct slotmap *sm)
{
	struct sm_claims *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->timeout_ns = (uint64_t)sm->st->topo->store.slot_claim_timeout_ms * 1000000ULL;
	sm->claims = c;
	return 0;
}

void sm_claims_close(struct slotmap *sm)
{
	if (!sm->claims)
		return;
	pthread_mutex_destroy(&sm->claims->lock);
	free(sm->claims);
	sm->claims = NULL;
}

uint64_t sm_claim_word(struct slotmap *sm, uint64_t now, uint64_t seq)
{
	struct store_svc *st = sm->st;
	uint64_t deadline = now / 1000000ULL + st->topo->store.slot_claim_timeout_ms;

	return slot_claim_word(seq, st->self == PC_PEER_NONE ? SLOT_CLAIM_ANON : st->self, deadline);
}

bool sm_claim_expired(struct slotmap *sm, uint32_t node, int cls, uint64_t bucket,
		      uint32_t way, uint64_t word)
{
	struct sm_claims *c = sm->claims;
	uint64_t where = (uint64_t)node << 32 | (uint64_t)(cls & 0xffff) << 16 | (uint64_t)way << 1 | 1;
	uint64_t h = (bucket * 0x9E3779B97F4A7C15ULL) ^ (where * 0xC2B2AE3D27D4EB4FULL);
	uint64_t now = pc_env_now(sm->st->env);
	struct claim_seen *set = c->e[(h >> 40) % CLAIM_SETS], *slot = NULL;
	bool expired = false;
	uint64_t taken;

	pthread_mutex_lock(&c->lock);
	/* A stale watch of the same way in another bucket is only a place to reuse: look
	 * on past it for this bucket's own watch. */
	for (uint32_t i = 0; i < CLAIM_WAYS && !(slot && slot->where == where && slot->bucket == bucket);
	     i++) {
		struct claim_seen *x = &set[i];

		if (x->where == where && x->bucket == bucket)
			slot = x;
		else if (!x->where && (!slot || slot->where))
			slot = x;	/* a free entry */
		else if (x->where && now - x->since_ns > 2 * c->timeout_ns &&
			 (!slot || (slot->where && x->since_ns < slot->since_ns)))
			slot = x;	/* a stale watch */
	}
	if (slot && slot->where == where && slot->bucket == bucket && slot->word == word) {
		expired = now - slot->since_ns >= c->timeout_ns;
		if (expired)	/* the taker's CAS moves the word on: forget it */
			*slot = (struct claim_seen){ 0 };
	} else if (slot) {
		*slot = (struct claim_seen){ .bucket = bucket, .where = where, .word = word,
					     .since_ns = now };
	}
	taken = expired ? ++c->taken : 0;
	pthread_mutex_unlock(&c->lock);
	if (!expired)
		return false;
	METRIC_ADD(sm->st, claims_taken_over, 1);
	if (!(taken & (taken - 1))) {	/* the 1st, 2nd, 4th, ...: a storm logs a few lines */
		const struct pc_topology *t = sm->st->topo;
		uint32_t by = slot_claim_claimer(word);

		pc_warn("slotmap: took over a slot claim %s%s left unwritten for %u ms (node %s, "
			"class %d, bucket %llu, way %u; %llu taken over so far)",
			by < t->nr_nodes ? "by node " : "by a client", by < t->nr_nodes ? t->nodes[by].name : "",
			t->store.slot_claim_timeout_ms, t->nodes[node].name, cls,
			(unsigned long long)bucket, way, (unsigned long long)taken);
	}
	return expired;
}
