/*
 * tcp_auth.c - the tcp handshake's cryptography (tcp_auth.h): loading the cluster
 * secret, nonces and the handshake MACs, all from OpenSSL's libcrypto.
 *
 * Not for: the handshake's messages or states (tcp_client.c, tcp_server.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <peercache/pc_fabric.h>

#include "base/log.h"
#include "config/topology.h"
#include "tcp_auth.h"

#define TRANSCRIPT_TAG "peercache-tcp-auth-v1"

static void hmac(const uint8_t *key, size_t klen, const void *data, size_t len,
		 uint8_t out[TCP_MAC_BYTES])
{
	unsigned int n = TCP_MAC_BYTES;

	if (!HMAC(EVP_sha256(), key, (int)klen, data, len, out, &n))
		memset(out, 0, TCP_MAC_BYTES);	/* never matches a real MAC's check below */
}

/* Read the secret at path into buf; its length, or -errno with err set. */
static ssize_t read_secret(const char *path, const char *what, uint8_t *buf, size_t cap,
			   char *err, size_t errlen)
{
	struct stat sb;
	ssize_t n;
	size_t b = 0, e;
	bool more;
	uint8_t extra;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int ret = -errno;

		snprintf(err, errlen, "%s %s: cannot open: %s; make it a file readable by the user running peercache",
			 what, path, strerror(errno));
		return ret;
	}
	if (!fstat(fd, &sb) && (sb.st_mode & 077))
		pc_warn("%s %s: readable by its group or others (mode %03o); chmod 600 it",
			what, path, (unsigned)(sb.st_mode & 0777));
	n = read(fd, buf, cap);
	/* a full buffer is too long a file only if more follows: the limit is the
	 * secret's, whitespace around it aside */
	more = n == (ssize_t)cap && read(fd, &extra, 1) > 0;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s %s: cannot read: %s", what, path, strerror(errno));
		return -EIO;
	}
	e = (size_t)n;
	while (b < e && (buf[b] == ' ' || buf[b] == '\t' || buf[b] == '\n' || buf[b] == '\r'))
		b++;
	while (e > b && (buf[e - 1] == ' ' || buf[e - 1] == '\t' || buf[e - 1] == '\n' ||
			 buf[e - 1] == '\r'))
		e--;
	if (more || e - b < TCP_SECRET_MIN || e - b >= TCP_SECRET_MAX) {
		snprintf(err, errlen,
			 "%s %s: %zu bytes; a secret has %d to %d (make one with: head -c 32 /dev/urandom | base64 > %s)",
			 what, path, e - b, TCP_SECRET_MIN, TCP_SECRET_MAX - 1, path);
		return -EINVAL;
	}
	memmove(buf, buf + b, e - b);
	return (ssize_t)(e - b);
}

int tcp_auth_load(const struct pc_topology *t, struct tcp_auth *a, char *err, size_t errlen)
{
	const char *path = t->store.auth_secret_file, *what = "store.auth_secret_file";
	uint8_t *buf;
	ssize_t n;

	memset(a, 0, sizeof(*a));
	if (!path[0]) {
		path = getenv("PEERCACHE_SECRET_FILE");
		what = "$PEERCACHE_SECRET_FILE";
	}
	if (!path || !path[0])
		return 0;
	buf = malloc(TCP_SECRET_MAX);
	if (!buf) {
		snprintf(err, errlen, "%s %s: out of memory", what, path);
		return -ENOMEM;
	}
	n = read_secret(path, what, buf, TCP_SECRET_MAX, err, errlen);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	hmac(buf, (size_t)n, "peercache node key", 18, a->node_key);
	hmac(buf, (size_t)n, "peercache client key", 20, a->client_key);
	OPENSSL_cleanse(buf, TCP_SECRET_MAX);
	/* the random source is seeded here, once, and not in the first handshake's
	 * round trip; a process without one learns it now */
	if (tcp_auth_nonce(buf, TCP_NONCE_BYTES)) {
		free(buf);
		snprintf(err, errlen, "%s %s: no random source for the handshake's nonces (OpenSSL RAND_bytes failed)",
			 what, path);
		return -EIO;
	}
	free(buf);
	snprintf(a->path, sizeof(a->path), "%s", path);
	a->on = true;
	return 0;
}

void tcp_auth_clear(struct tcp_auth *a)
{
	OPENSSL_cleanse(a, sizeof(*a));
}

int tcp_auth_nonce(uint8_t *out, size_t n)
{
	return RAND_bytes(out, (int)n) == 1 ? 0 : -EIO;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

void tcp_auth_mac(const struct tcp_auth *a, enum tcp_auth_dir dir, const struct tcp_hello *hello,
		  const struct tcp_hello_ack *ack, uint8_t out[TCP_MAC_BYTES])
{
	uint8_t t[sizeof(TRANSCRIPT_TAG) + 4 + 3 * 4 + 4 * 8 + 2 * TCP_NONCE_BYTES], *p = t;
	const uint8_t *key = dir == TCP_AUTH_CLIENT && hello->node == PC_PEER_NONE ?
			     a->client_key : a->node_key;

	memcpy(p, TRANSCRIPT_TAG, sizeof(TRANSCRIPT_TAG));
	p += sizeof(TRANSCRIPT_TAG);
	p = put32(p, (uint32_t)dir);
	p = put32(p, hello->node);
	p = put32(p, hello->expect_node);
	p = put64(p, hello->incarnation);
	p = put64(p, hello->fingerprint);
	p = put32(p, ack->node);
	p = put64(p, ack->incarnation);
	p = put64(p, ack->fingerprint);
	memcpy(p, hello->nonce, TCP_NONCE_BYTES);
	p += TCP_NONCE_BYTES;
	memcpy(p, ack->nonce, TCP_NONCE_BYTES);
	p += TCP_NONCE_BYTES;
	hmac(key, TCP_MAC_BYTES, t, (size_t)(p - t), out);
}

bool tcp_auth_check(const struct tcp_auth *a, enum tcp_auth_dir dir, const struct tcp_hello *hello,
		    const struct tcp_hello_ack *ack, const uint8_t mac[TCP_MAC_BYTES])
{
	static const uint8_t zero[TCP_MAC_BYTES];
	uint8_t want[TCP_MAC_BYTES];

	if (!a->on)
		return false;
	tcp_auth_mac(a, dir, hello, ack, want);
	return !CRYPTO_memcmp(want, mac, TCP_MAC_BYTES) && CRYPTO_memcmp(want, zero, TCP_MAC_BYTES);
}
