/*
 * directory.c - a directory shard (see directory.h): records in a growable array,
 * found through a key map rebuilt twice as large when it fills.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "directory.h"

#define FIRST 1024

int dir_init(struct dir *d, uint32_t nr_nodes, uint32_t node_cap)
{
	int ret;

	memset(d, 0, sizeof(*d));
	d->per_node = calloc(nr_nodes ? nr_nodes : 1, sizeof(*d->per_node));
	if (!d->per_node)
		return -ENOMEM;
	d->nr_nodes = nr_nodes;
	d->node_cap = node_cap;
	ret = keymap_init(&d->map, FIRST);
	if (ret) {
		free(d->per_node);
		return ret;
	}
	pthread_mutex_init(&d->lock, NULL);
	return 0;
}

void dir_fini(struct dir *d)
{
	keymap_fini(&d->map);
	free(d->per_node);
	free(d->rec);
	free(d->free_rec);
	pthread_mutex_destroy(&d->lock);
}

/* A map twice as large, filled from the records. */
static int grow_map(struct dir *d)
{
	struct keymap m;
	int ret = keymap_init(&m, d->map.max * 2);

	for (uint32_t i = 0; !ret && i < d->nr_rec; i++)
		if (d->rec[i].used)
			ret = keymap_put(&m, d->rec[i].key, i);
	if (ret) {
		keymap_fini(&m);
		return ret;
	}
	keymap_fini(&d->map);
	d->map = m;
	return 0;
}

static int new_record(struct dir *d, uint32_t *out)
{
	if (d->nr_free) {
		*out = d->free_rec[--d->nr_free];
		return 0;
	}
	if (d->nr_rec == d->cap_rec) {
		uint32_t cap = d->cap_rec ? d->cap_rec * 2 : FIRST;
		struct dir_rec *r = realloc(d->rec, cap * sizeof(*r));
		uint32_t *f = r ? realloc(d->free_rec, cap * sizeof(*f)) : NULL;

		if (r)
			d->rec = r;
		if (!f)
			return -ENOMEM;
		d->free_rec = f;
		d->cap_rec = cap;
	}
	*out = d->nr_rec++;
	return 0;
}

static void drop_record(struct dir *d, uint32_t i)
{
	d->per_node[d->rec[i].loc.node]--;
	keymap_del(&d->map, d->rec[i].key);
	d->rec[i].used = false;
	d->free_rec[d->nr_free++] = i;
}

int dir_put(struct dir *d, struct pc_keyhash key, const struct dir_loc *loc,
	    struct dir_loc *replaced)
{
	uint32_t i;
	int ret = 0;

	replaced->node = DIR_NO_NODE;
	if (loc->node >= d->nr_nodes)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (keymap_get(&d->map, key, &i)) {
		const struct dir_loc *o = &d->rec[i].loc;

		if (o->node != loc->node) {
			if (d->per_node[loc->node] >= d->node_cap) {
				ret = -ENOSPC;
				goto out;
			}
			*replaced = *o;
			d->per_node[o->node]--;
			d->per_node[loc->node]++;
		}
		if (o->node != loc->node || o->inc != loc->inc || o->gen < loc->gen)
			d->rec[i].loc = *loc;
		goto out;
	}
	if (d->per_node[loc->node] >= d->node_cap) {
		ret = -ENOSPC;
		goto out;
	}
	if (d->map.n == d->map.max && (ret = grow_map(d)))
		goto out;
	ret = new_record(d, &i);
	if (ret)
		goto out;
	d->rec[i] = (struct dir_rec){ .key = key, .loc = *loc, .used = true };
	keymap_put(&d->map, key, i);	/* room was made above */
	d->per_node[loc->node]++;
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

bool dir_get(struct dir *d, struct pc_keyhash key, struct dir_loc *out)
{
	uint32_t i;
	bool found;

	pthread_mutex_lock(&d->lock);
	found = keymap_get(&d->map, key, &i);
	if (found)
		*out = d->rec[i].loc;
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool dir_del_if(struct dir *d, struct pc_keyhash key, const struct dir_loc *loc)
{
	const struct dir_loc *o;
	uint32_t i;
	bool found;

	pthread_mutex_lock(&d->lock);
	found = keymap_get(&d->map, key, &i);
	if (found) {
		o = &d->rec[i].loc;
		found = o->node == loc->node && o->inc == loc->inc && o->addr == loc->addr &&
			o->gen == loc->gen;
	}
	if (found)
		drop_record(d, i);
	pthread_mutex_unlock(&d->lock);
	return found;
}

uint32_t dir_drop_node(struct dir *d, uint32_t node)
{
	uint32_t n = 0;

	pthread_mutex_lock(&d->lock);
	for (uint32_t i = 0; i < d->nr_rec; i++)
		if (d->rec[i].used && d->rec[i].loc.node == node) {
			drop_record(d, i);
			n++;
		}
	pthread_mutex_unlock(&d->lock);
	return n;
}

int dir_take_if(struct dir *d, bool (*moved)(void *arg, struct pc_keyhash key), void *arg,
		struct dir_rec **out)
{
	struct dir_rec *v = NULL;
	uint32_t n = 0, cap = 0;

	pthread_mutex_lock(&d->lock);
	for (uint32_t i = 0; i < d->nr_rec; i++) {
		if (!d->rec[i].used || !moved(arg, d->rec[i].key))
			continue;
		if (n == cap) {
			struct dir_rec *nv = realloc(v, (cap ? cap * 2 : 256) * sizeof(*nv));

			if (!nv)
				break;	/* the rest stay here: a later pass moves them */
			v = nv;
			cap = cap ? cap * 2 : 256;
		}
		v[n++] = d->rec[i];
		drop_record(d, i);
	}
	pthread_mutex_unlock(&d->lock);
	*out = v;
	return (int)n;
}

uint32_t dir_size(struct dir *d)
{
	uint32_t n;

	pthread_mutex_lock(&d->lock);
	n = d->map.n;
	pthread_mutex_unlock(&d->lock);
	return n;
}
