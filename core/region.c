/*
 * region.c - region table: key, bounds and rights checks for emulated one-sided ops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "region.h"

int region_table_init(struct region_table *t)
{
	memset(t, 0, sizeof(*t));
	return -pthread_rwlock_init(&t->lock, NULL);
}

void region_table_fini(struct region_table *t)
{
	free(t->v);
	pthread_rwlock_destroy(&t->lock);
}

static struct region_entry *find(struct region_table *t, uint32_t key)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].key == key)
			return &t->v[i];
	return NULL;
}

int region_table_add(struct region_table *t, struct pc_region *r, uint64_t rnd)
{
	uint32_t key = (uint32_t)rnd ? (uint32_t)rnd : (uint32_t)(rnd >> 32) | 1u;
	int ret = 0;

	pthread_rwlock_wrlock(&t->lock);
	/* Keys are random so that a key from before a restart is refused, not reused. */
	while (!key || find(t, key))
		key = key * 2654435761u + 1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct region_entry *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = (struct region_entry){ .key = key, .access = r->access,
					       .addr = r->addr, .len = r->len };
	r->key = key;
out:
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

void region_table_del(struct region_table *t, uint32_t key)
{
	pthread_rwlock_wrlock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].key == key) {
			t->v[i] = t->v[--t->n];
			break;
		}
	}
	pthread_rwlock_unlock(&t->lock);
}

int region_table_check(struct region_table *t, uint32_t key, uint64_t raddr, uint64_t len,
		       unsigned access, uint8_t **where)
{
	struct region_entry *e;
	uint64_t base;
	int ret = 0;

	pthread_rwlock_rdlock(&t->lock);
	e = find(t, key);
	if (!e) {
		ret = -ENOKEY;
		goto out;
	}
	base = (uint64_t)(uintptr_t)e->addr;
	if (raddr < base || len > e->len || raddr - base > e->len - len) {
		ret = -EFAULT;
		goto out;
	}
	if ((e->access & access) != access) {
		ret = -EACCES;
		goto out;
	}
	if (access == PC_ACCESS_REMOTE_ATOMIC && (len != 8 || raddr % 8)) {
		ret = -EINVAL;
		goto out;
	}
	*where = e->addr + (raddr - base);
out:
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

uint64_t region_cas(uint8_t *where, uint64_t compare, uint64_t swap)
{
	uint64_t expect = compare;

	__atomic_compare_exchange_n((uint64_t *)where, &expect, swap, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	return expect;
}

void region_apply(const struct pc_op *op, uint8_t *where)
{
	uint64_t old;

	switch (op->kind) {
	case PC_OP_READ:
		if (op->head_len)
			memcpy(op->head, where, op->head_len);
		if (op->len)
			memcpy(op->local, where + op->head_len, op->len);
		break;
	case PC_OP_WRITE:
		if (op->head_len)
			memcpy(where, op->head, op->head_len);
		if (op->len)
			memcpy(where + op->head_len, op->local, op->len);
		break;
	case PC_OP_CAS:
		old = region_cas(where, op->compare, op->swap);
		memcpy(op->local, &old, 8);
		break;
	}
}
