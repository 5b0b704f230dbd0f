/*
 * etcd.c - the membership registry in etcd (store.discovery: etcd), through etcd's
 * v3 JSON gateway over HTTP (libcurl; keys and values are base64 in the JSON):
 *
 *   PREFIX placement       the placement text of the cluster (created once, by a txn)
 *   PREFIX table/NNNNN     entry NNNNN of the node table: {"name","address","port"},
 *                          created by a txn that succeeds only while it is absent
 *   PREFIX live/NNNNN      {"name","incarnation"} under the node's lease
 *
 * A node takes a lease of ceil(failure_timeout) seconds (etcd rounds up to its own
 * minimum, 2 s for 3.4's defaults), writes its live record under it and keeps it
 * alive every third of the TTL etcd granted; a node that stops is gone when the
 * lease expires. Everyone watches the prefix (/v3/watch, a stream read by a thread
 * of its own): an event, or a watch not (yet) established, makes the next heartbeat
 * read table/ and live/ (two ranges), which is how a change reaches them within one
 * heartbeat (core/member.c lists at least every failure timeout anyway, in case a
 * watch stalls unseen). Endpoints are tried in order; one that fails moves the next
 * to the front.
 *
 * Not for: what membership does with it (core/member.c).
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "builtin.h"
#include "config/topology.h"
#include "member_registry.h"

#define MAX_ENDPOINTS 8
#define KEY_MAX (PC_NAME_MAX + 32)
#define WATCH_LINE_MAX (1u << 20)	/* a watch message longer than this ends the stream */
#define WATCH_RETRY_MS 500		/* between watch attempts */

struct etcd {
	CURL *curl;
	char endpoints[MAX_ENDPOINTS][PC_PATH_MAX];
	uint32_t nr_endpoints, at;	/* the one that answered last */
	char prefix[PC_NAME_MAX];
	long timeout_ms;
	int64_t lease;			/* 0: none */
	uint64_t lease_ttl_ms;		/* as etcd granted it */
	uint64_t kept_at_ns;		/* last grant or keepalive */
	uint32_t index;			/* the live record's entry */
	/* the watch of the prefix: a thread with a connection of its own */
	CURLM *multi;
	pthread_t watcher;
	bool watcher_on;
	int stop, changed, watching;	/* atomics */
};

struct buf {
	char *p;
	size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	char *q = realloc(b->p, b->len + size * n + 1);

	if (!q)
		return 0;
	memcpy(q + b->len, p, size * n);
	b->len += size * n;
	q[b->len] = 0;
	b->p = q;
	return size * n;
}

/* ------------------------------------------------------------------ base64 */

static char *b64(const void *p, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, p, (int)n);
	return out;
}

/* Decode s into out (cap bytes, NUL-terminated). Length, or -1. */
static int unb64(const char *s, char *out, size_t cap)
{
	size_t n = strlen(s);
	unsigned char *tmp = malloc(n / 4 * 3 + 3);
	int len;

	if (!tmp)
		return -1;
	len = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)n);
	if (len >= 0) {
		for (size_t i = n; i > 0 && s[i - 1] == '='; i--)
			len--;	/* EVP_DecodeBlock counts the padding */
		if ((size_t)len >= cap)
			len = -1;
		else {
			memcpy(out, tmp, (size_t)len);
			out[len] = 0;
		}
	}
	free(tmp);
	return len;
}

/* ------------------------------------------------------------------ calls */

/* POST body (stolen) to path; the answer in *resp. 0, -ECONNREFUSED (no endpoint
 * answered), -EIO (those that answered could not serve: 5xx) or -EPROTO (an answer
 * that is not JSON, or an error). */
static int call(struct etcd *e, const char *path, json_t *body, json_t **resp)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int ret = -ECONNREFUSED;

	json_decref(body);
	*resp = NULL;
	if (!text)
		return -ENOMEM;
	for (uint32_t k = 0; k < e->nr_endpoints && (ret == -ECONNREFUSED || ret == -EIO); k++) {
		uint32_t i = (e->at + k) % e->nr_endpoints;
		char url[PC_PATH_MAX + 64];
		struct buf b = { 0 };
		long code = 0;
		CURLcode c;

		snprintf(url, sizeof(url), "%s%s", e->endpoints[i], path);
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
		c = curl_easy_perform(e->curl);
		if (c == CURLE_OK)
			curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
		if (c == CURLE_OK && code == 200 && b.p) {
			*resp = json_loads(b.p, 0, NULL);
			ret = *resp ? 0 : -EPROTO;
			__atomic_store_n(&e->at, i, __ATOMIC_RELAXED);	/* the watch reads it */
		} else if (c == CURLE_OK && code >= 500) {
			/* it answered but cannot serve now (a member without a leader
			 * or quorum, a proxy without its backend): the next one may */
			ret = -EIO;
		} else if (c == CURLE_OK) {
			ret = code == 404 ? -ENOENT : -EPROTO;	/* it answered: an error */
		}
		free(b.p);
	}
	free(text);
	return ret;
}

static json_t *kv(const char *key, const char *value)
{
	char *k = b64(key, strlen(key)), *v = value ? b64(value, strlen(value)) : NULL;
	json_t *o = json_pack("{s:s}", "key", k ? k : "");

	if (v)
		json_object_set_new(o, "value", json_string(v));
	free(k);
	free(v);
	return o;
}

/* The prefix range [key, key+1) of a key. */
static json_t *range_of(const char *key)
{
	char end[KEY_MAX];
	size_t n = strlen(key);
	json_t *o;
	char *e;

	/* An empty key (store.etcd_prefix "") has no last byte to raise: every key is
	 * etcd's key "\0" to range_end "\0" ("AA==" in base64). */
	if (!n)
		return json_pack("{s:s,s:s}", "key", "AA==", "range_end", "AA==");
	o = kv(key, NULL);
	snprintf(end, sizeof(end), "%s", key);
	end[n - 1]++;
	e = b64(end, n);
	json_object_set_new(o, "range_end", json_string(e ? e : ""));
	free(e);
	return o;
}

/* Create key = value unless it exists; the value it holds in out either way. */
static int create(struct etcd *e, const char *key, const char *value, bool *created, char *out,
		  size_t cap)
{
	json_t *cmp = kv(key, NULL), *put = kv(key, value), *get = kv(key, NULL), *r, *kvs;
	json_t *body;
	int ret;

	json_object_set_new(cmp, "target", json_string("CREATE"));
	json_object_set_new(cmp, "create_revision", json_string("0"));
	body = json_pack("{s:[o],s:[{s:o}],s:[{s:o}]}", "compare", cmp, "success", "request_put", put,
			 "failure", "request_range", get);
	ret = call(e, "/v3/kv/txn", body, &r);
	if (ret)
		return ret;
	*created = json_is_true(json_object_get(r, "succeeded"));
	if (*created) {
		snprintf(out, cap, "%s", value);
	} else {
		kvs = json_object_get(json_object_get(json_array_get(json_object_get(r, "responses"), 0),
						      "response_range"), "kvs");
		if (unb64(json_string_value(json_object_get(json_array_get(kvs, 0), "value")) ?: "",
			  out, cap) < 0)
			ret = -EPROTO;
	}
	json_decref(r);
	return ret;
}

/* ------------------------------------------------------------------ the watch */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct watch_stream {
	struct etcd *e;
	struct buf b;
};

/* One message of the stream: created, events, or the end of the watch. Returns
 * false when the stream must end. */
static bool watch_message(struct etcd *e, const char *p, size_t n)
{
	json_t *j = json_loadb(p, n, 0, NULL), *res = json_object_get(j, "result");
	bool go_on = j && res && !json_is_true(json_object_get(res, "canceled"));

	if (go_on && json_is_true(json_object_get(res, "created")))
		__atomic_store_n(&e->watching, 1, __ATOMIC_RELEASE);
	if (!go_on || json_is_true(json_object_get(res, "created")) ||
	    json_array_size(json_object_get(res, "events")))
		__atomic_store_n(&e->changed, 1, __ATOMIC_RELEASE);
	json_decref(j);
	return go_on;
}

/* The stream's bytes: messages end at newlines. */
static size_t on_watch(char *p, size_t size, size_t n, void *arg)
{
	struct watch_stream *w = arg;
	char *nl;
	size_t used = 0;

	if (on_data(p, size, n, &w->b) != size * n)
		return 0;
	while ((nl = memchr(w->b.p + used, '\n', w->b.len - used))) {
		if (nl > w->b.p + used && !watch_message(w->e, w->b.p + used, (size_t)(nl - w->b.p - used)))
			return 0;
		used = (size_t)(nl - w->b.p) + 1;
	}
	memmove(w->b.p, w->b.p + used, w->b.len - used);
	w->b.len -= used;
	return w->b.len > WATCH_LINE_MAX ? 0 : size * n;
}

/* Watch [prefix, prefix+1) from now on, endpoint after endpoint, until closed. */
static void *watch_run(void *arg)
{
	struct etcd *e = arg;
	json_t *body = json_pack("{s:o}", "create_request", range_of(e->prefix));
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	CURL *c = curl_easy_init();

	json_decref(body);
	for (uint32_t k = 0; c && text && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE); k++) {
		struct watch_stream w = { .e = e };
		char url[PC_PATH_MAX + 64];
		int running = 1;

		snprintf(url, sizeof(url), "%s/v3/watch",
			 e->endpoints[(__atomic_load_n(&e->at, __ATOMIC_RELAXED) + k) % e->nr_endpoints]);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_watch);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
		curl_multi_add_handle(e->multi, c);
		while (running && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
			if (curl_multi_perform(e->multi, &running) != CURLM_OK)
				break;
			if (running)
				curl_multi_poll(e->multi, NULL, 0, 1000, NULL);
		}
		curl_multi_remove_handle(e->multi, c);
		free(w.b.p);
		/* the stream ended: list every heartbeat until a watch is back */
		__atomic_store_n(&e->watching, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&e->changed, 1, __ATOMIC_RELEASE);
		for (int t = 0; t < WATCH_RETRY_MS / 50 && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE); t++)
			usleep(50000);
	}
	curl_easy_cleanup(c);
	free(text);
	return NULL;
}

static bool etcd_changed(void *arg)
{
	struct etcd *e = arg;
	bool changed = __atomic_exchange_n(&e->changed, 0, __ATOMIC_ACQ_REL);

	return changed || !__atomic_load_n(&e->watching, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------ the ops */

static void etcd_close(void *arg)
{
	struct etcd *e = arg;

	if (!e)
		return;
	if (e->watcher_on) {
		__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
		curl_multi_wakeup(e->multi);
		pthread_join(e->watcher, NULL);
	}
	if (e->multi)
		curl_multi_cleanup(e->multi);
	curl_easy_cleanup(e->curl);
	free(e);
}

static void curl_setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int etcd_open(const struct pc_topology *t, const char *placement, void **out, char *err,
		     size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	char key[KEY_MAX], theirs[TOPOLOGY_PLACEMENT_TEXT_MAX], diff[256];
	const char *p = t->store.etcd_endpoints;
	struct etcd *e;
	bool created;
	int ret;

	pthread_once(&once, curl_setup);
	e = calloc(1, sizeof(*e));
	if (!e || !(e->curl = curl_easy_init())) {
		free(e);
		snprintf(err, errlen, "%s: out of memory", t->source);
		return -ENOMEM;
	}
	while (*p && e->nr_endpoints < MAX_ENDPOINTS) {
		size_t n = strcspn(p, ", ");

		if (n && n < PC_PATH_MAX)
			snprintf(e->endpoints[e->nr_endpoints++], PC_PATH_MAX, "%.*s", (int)n, p);
		p += n;
		p += strspn(p, ", ");
	}
	snprintf(e->prefix, sizeof(e->prefix), "%s", t->store.etcd_prefix);
	e->timeout_ms = t->store.timeout_ms;
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
	if (!e->nr_endpoints) {
		snprintf(err, errlen, "%s: store.etcd_endpoints: expected http://host:port[,...], got '%s'",
			 t->source, t->store.etcd_endpoints);
		etcd_close(e);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "%splacement", e->prefix);
	ret = create(e, key, placement, &created, theirs, sizeof(theirs));
	if (ret) {
		snprintf(err, errlen, "%s: store.etcd_endpoints %s: %s", t->source,
			 t->store.etcd_endpoints,
			 ret == -ECONNREFUSED ? "no endpoint answered; start etcd, or fix the list" :
			 ret == -EIO ? "the endpoints that answered could not serve (HTTP 5xx); check that etcd has a leader (etcdctl endpoint health)" :
				       strerror(-ret));
	} else if (topology_placement_diff(placement, strlen(placement), theirs, strlen(theirs), diff,
					   sizeof(diff))) {
		snprintf(err, errlen, "%s: the cluster in etcd (%s%s) has other placement settings: %s; use the cluster's settings and peercache version, or another store.etcd_prefix",
			 t->source, t->store.etcd_endpoints, e->prefix, diff);
		ret = -ESTALE;
	}
	if (!ret) {	/* without a watch, membership lists every heartbeat */
		e->changed = 1;
		e->multi = curl_multi_init();
		e->watcher_on = e->multi && !pthread_create(&e->watcher, NULL, watch_run, e);
	}
	if (ret) {
		etcd_close(e);
		return ret;
	}
	*out = e;
	return 0;
}

/* The records of one prefix range: f(arg, index, json) per key "PREFIXwhat/NNNNN". */
static int each(struct etcd *e, const char *what, void (*f)(void *, uint32_t, json_t *), void *arg)
{
	char key[KEY_MAX], value[512];
	json_t *r, *kvs, *one;
	size_t i;
	int ret;

	snprintf(key, sizeof(key), "%s%s/", e->prefix, what);
	ret = call(e, "/v3/kv/range", range_of(key), &r);
	if (ret)
		return ret;
	kvs = json_object_get(r, "kvs");
	json_array_foreach(kvs, i, one) {
		char name[KEY_MAX];
		const char *k = json_string_value(json_object_get(one, "key"));
		const char *v = json_string_value(json_object_get(one, "value"));
		unsigned long index;
		char *end;
		json_t *j;

		if (!k || !v || unb64(k, name, sizeof(name)) < 0 || unb64(v, value, sizeof(value)) < 0 ||
		    strncmp(name, key, strlen(key)))
			continue;
		index = strtoul(name + strlen(key), &end, 10);
		if (*end || index > PC_MAX_NODES || !(j = json_loads(value, 0, NULL)))
			continue;
		f(arg, (uint32_t)index, j);
		json_decref(j);
	}
	json_decref(r);
	return 0;
}

struct listing {
	struct registry_entry *e;
	uint32_t cap, n;
};

static void take_entry(void *arg, uint32_t index, json_t *j)
{
	struct listing *l = arg;
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *address = json_string_value(json_object_get(j, "address"));
	json_int_t port = json_integer_value(json_object_get(j, "port"));
	struct registry_entry *x;

	if (l->n >= l->cap || index >= l->cap || !name || !address || port <= 0 || port > 65535)
		return;
	x = &l->e[l->n++];
	*x = (struct registry_entry){ .index = index, .port = (uint16_t)port };
	snprintf(x->name, sizeof(x->name), "%s", name);
	snprintf(x->address, sizeof(x->address), "%s", address);
}

static void take_live(void *arg, uint32_t index, json_t *j)
{
	struct listing *l = arg;
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *inc = json_string_value(json_object_get(j, "incarnation"));

	for (uint32_t k = 0; name && inc && k < l->n; k++)
		if (l->e[k].index == index && !strcmp(l->e[k].name, name)) {
			l->e[k].live = true;
			l->e[k].incarnation = strtoull(inc, NULL, 16);
		}
}

static int etcd_list(void *arg, struct registry_entry *e, uint32_t cap, uint32_t *n)
{
	struct listing l = { .e = e, .cap = cap };
	int ret = each(arg, "table", take_entry, &l);

	if (!ret)
		ret = each(arg, "live", take_live, &l);
	*n = l.n;
	return ret;
}

/* An entry a claim lost its race for, as its record says: 1 when it is this very
 * node's (name, address, port), -EEXIST when another node of that name took it (it
 * would have been refused a moment later: taking another entry would give the table
 * two entries of one name), else 0 (someone else's: try on). */
static int held_by(const char *held, const char *name, const char *address, uint16_t port)
{
	json_t *j = json_loads(held, 0, NULL);
	const char *n = json_string_value(json_object_get(j, "name"));
	const char *a = json_string_value(json_object_get(j, "address"));
	json_int_t p = json_integer_value(json_object_get(j, "port"));
	int ret = 0;

	if (n && !strcmp(n, name))
		ret = a && !strcmp(a, address) && p == port ? 1 : -EEXIST;
	json_decref(j);
	return ret;
}

static int etcd_claim(void *arg, const char *name, const char *address, uint16_t port,
		      uint32_t want, uint32_t cap, uint32_t *index)
{
	struct etcd *e = arg;
	struct registry_entry *all = calloc(cap ? cap : 1, sizeof(*all));
	uint8_t *taken = calloc(cap ? cap : 1, 1);
	uint32_t n = 0;
	int ret = all && taken ? etcd_list(e, all, cap, &n) : -ENOMEM;

	for (uint32_t k = 0; !ret && k < n; k++) {
		taken[all[k].index] = 1;
		if (!strcmp(all[k].name, name)) {
			*index = all[k].index;
			ret = strcmp(all[k].address, address) || all[k].port != port ? -EEXIST : 1;
		}
	}
	/* the place it wants, else the lowest free; a txn that loses a race tries on,
	 * unless the winner is of its own name (held_by) */
	for (uint32_t k = 0; !ret && k <= cap; k++) {
		uint32_t i = k == 0 ? want : k - 1;
		char key[KEY_MAX], held[512], *value;
		bool created;
		json_t *j;

		if (i >= cap || taken[i])
			continue;
		j = json_pack("{s:s,s:s,s:i}", "name", name, "address", address, "port", (int)port);
		value = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(j);
		snprintf(key, sizeof(key), "%stable/%05u", e->prefix, i);
		ret = value ? create(e, key, value, &created, held, sizeof(held)) : -ENOMEM;
		free(value);
		if (!ret && created) {
			*index = i;
			ret = 1;
		} else if (!ret) {
			ret = held_by(held, name, address, port);
			if (ret == 1)
				*index = i;
		}
		taken[i] = 1;
	}
	free(all);
	free(taken);
	return ret == 1 ? 0 : ret ? ret : -ENOSPC;
}

static int etcd_alive(void *arg, uint32_t index, const char *name, uint64_t incarnation,
		      uint32_t ttl_ms)
{
	struct etcd *e = arg;
	char key[KEY_MAX], inc[20], lease[24], *value;
	json_t *r, *body;
	int ret;

	if (e->lease && e->index == index) {
		if (now_ns() - e->kept_at_ns < e->lease_ttl_ms * 1000000 / 3)
			return 0;	/* kept alive a third of its TTL ago */
		snprintf(lease, sizeof(lease), "%" PRId64, e->lease);
		ret = call(e, "/v3/lease/keepalive", json_pack("{s:s}", "ID", lease), &r);
		if (!ret && json_object_get(json_object_get(r, "result"), "TTL")) {
			json_decref(r);
			e->kept_at_ns = now_ns();
			return 0;
		}
		json_decref(r);
		if (ret)
			return ret;
		e->lease = 0;	/* expired: a new lease and the record again */
	}
	ret = call(e, "/v3/lease/grant", json_pack("{s:i}", "TTL", (int)((ttl_ms + 999) / 1000)), &r);
	if (ret)
		return ret;
	e->lease = strtoll(json_string_value(json_object_get(r, "ID")) ?: "0", NULL, 10);
	e->lease_ttl_ms = 1000 * strtoull(json_string_value(json_object_get(r, "TTL")) ?: "0", NULL, 10);
	if (!e->lease_ttl_ms)
		e->lease_ttl_ms = ttl_ms;
	e->kept_at_ns = now_ns();
	json_decref(r);
	if (!e->lease)
		return -EPROTO;
	e->index = index;
	snprintf(inc, sizeof(inc), "%016" PRIx64, incarnation);
	snprintf(key, sizeof(key), "%slive/%05u", e->prefix, index);
	body = json_pack("{s:s,s:s}", "name", name, "incarnation", inc);
	value = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(body);
	body = kv(key, value ? value : "");
	free(value);
	snprintf(lease, sizeof(lease), "%" PRId64, e->lease);
	json_object_set_new(body, "lease", json_string(lease));
	ret = call(e, "/v3/kv/put", body, &r);
	json_decref(r);
	/* Without its record the lease is no use: kept alive, it would say this node
	 * lives to itself while every other node sees no live record. The next call
	 * takes a new one and writes the record; this one expires by itself. */
	if (ret)
		e->lease = 0;
	return ret;
}

static void etcd_leave(void *arg)
{
	struct etcd *e = arg;
	char lease[24];
	json_t *r;

	if (!e->lease)
		return;
	snprintf(lease, sizeof(lease), "%" PRId64, e->lease);
	call(e, "/v3/lease/revoke", json_pack("{s:s}", "ID", lease), &r);
	json_decref(r);
	e->lease = 0;
}

const struct registry_ops etcd_registry_ops = {
	.name = "etcd",
	.open = etcd_open,
	.close = etcd_close,
	.list = etcd_list,
	.claim = etcd_claim,
	.alive = etcd_alive,
	.leave = etcd_leave,
	.changed = etcd_changed,
};
