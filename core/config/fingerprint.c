/*
 * fingerprint.c - the config fingerprint: the settings every peer of a cluster must
 * share because they decide where a key lives and how a node's slots are laid out
 * (the schema marks them: field.placement), and the version of the messages they
 * exchange (proto.h), written as text and hashed. Two peers whose hashes differ
 * would place or address pages differently and read each other's slots as misses,
 * or misread each other's messages; the handshake refuses them, and the text lets
 * both sides name the first setting that differs.
 *
 * Not for: exchanging it (each fabric backend's handshake) or settings that stay
 * local to one process (timeouts, polling, read policy).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "proto.h"
#include "topology_fields.h"

/* A static node list decides the ring: its size and names, the names as one hash so
 * the text stays short for a cluster of any size. */
static uint64_t node_names_hash(const struct pc_topology *t)
{
	XXH3_state_t *s = XXH3_createState();
	uint64_t h;

	if (!s)
		return 0;
	XXH3_64bits_reset(s);
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		XXH3_64bits_update(s, t->nodes[i].name, strlen(t->nodes[i].name) + 1);
	h = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	return h;
}

int topology_placement_text(const struct pc_topology *t, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	int ret = 0;

	if (!f)
		return -ENOMEM;
	/* first: the version of the messages (a build before it has none) */
	fprintf(f, "peercache.wire_version=%u\n", PROTO_WIRE_VERSION);
	for (size_t i = 0; i < store_section.nr_fields; i++) {
		const struct field *fd = &store_section.fields[i];

		if (!fd->placement)
			continue;
		fprintf(f, "store.%s=", fd->name);
		field_print(fd, &t->store, f);
		fputc('\n', f);
	}
	fprintf(f, "nodes.count=%u\n", t->nr_nodes);
	if (!t->store.max_nodes)
		fprintf(f, "nodes.names=%016llx\n", (unsigned long long)node_names_hash(t));
	if (ftell(f) >= (long)len)
		ret = -ERANGE;
	fclose(f);
	return ret;
}

uint64_t topology_fingerprint(const struct pc_topology *t)
{
	char text[TOPOLOGY_PLACEMENT_TEXT_MAX];

	if (topology_placement_text(t, text, sizeof(text)))
		return 0;
	return XXH3_64bits(text, strlen(text));
}

/* The value of key in text ("key=value" lines), or NULL; *vlen its length. */
static const char *value_of(const char *text, size_t tlen, const char *key, size_t klen,
			    size_t *vlen)
{
	const char *end = text + tlen;

	for (const char *l = text; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;

		if ((size_t)(le - l) > klen && !memcmp(l, key, klen) && l[klen] == '=') {
			*vlen = (size_t)(le - l) - klen - 1;
			return l + klen + 1;
		}
		l = le + 1;
	}
	return NULL;
}

bool topology_placement_diff(const char *ours, size_t olen, const char *theirs, size_t tlen,
			     char *out, size_t outlen)
{
	const char *end = ours + olen;

	for (const char *l = ours; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;
		const char *eq = memchr(l, '=', (size_t)(le - l));
		const char *tv;
		size_t vlen;

		if (eq) {
			size_t klen = (size_t)(eq - l), olv = (size_t)(le - eq - 1);

			tv = value_of(theirs, tlen, l, klen, &vlen);
			if (!tv || vlen != olv || memcmp(tv, eq + 1, olv)) {
				snprintf(out, outlen, "%.*s is %.*s here, %.*s there", (int)klen, l,
					 (int)olv, eq + 1, tv ? (int)(vlen > 64 ? 64 : vlen) : 7,
					 tv ? tv : "not set");
				return true;
			}
		}
		l = le + 1;
	}
	if (olen != tlen || memcmp(ours, theirs, olen)) {
		snprintf(out, outlen, "the peer has placement settings this build does not know");
		return true;
	}
	return false;
}
