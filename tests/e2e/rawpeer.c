/*
 * rawpeer.c - a hand-driven tcp peer for attack tests (rawpeer.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>

#include "config/topology.h"
#include "rawpeer.h"
#include "testutil.h"

void raw_hello(struct raw_peer *p, uint16_t port, const struct pc_topology *t, uint32_t node,
	       uint32_t expect, bool auth_flag)
{
	char text[TOPOLOGY_PLACEMENT_TEXT_MAX];
	uint8_t body[sizeof(struct tcp_hello_ack) + TCP_TEXT_MAX];
	struct tcp_hdr h;

	memset(p, 0, sizeof(*p));
	p->fd = pc_test_connect(port);
	p->status = 1;
	CU_ASSERT_EQUAL(topology_placement_text(t, text, sizeof(text)), 0);
	p->hello = (struct tcp_hello){ .node = node, .expect_node = expect, .incarnation = 77,
				       .fingerprint = topology_fingerprint(t),
				       .flags = auth_flag ? TCP_HELLO_AUTH : 0,
				       .text_len = (uint32_t)strlen(text) };
	CU_ASSERT_EQUAL(tcp_auth_nonce(p->hello.nonce, sizeof(p->hello.nonce)), 0);
	h = (struct tcp_hdr){ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO,
			      .body_len = sizeof(p->hello) + p->hello.text_len };
	send(p->fd, &h, sizeof(h), MSG_NOSIGNAL);
	send(p->fd, &p->hello, sizeof(p->hello), MSG_NOSIGNAL);
	send(p->fd, text, p->hello.text_len, MSG_NOSIGNAL);
	if (raw_next(p, &h, 2000) != TCP_HELLO_ACK || h.body_len < sizeof(p->ack) ||
	    h.body_len > sizeof(body))
		return;
	if (recv(p->fd, body, h.body_len, MSG_WAITALL) != (ssize_t)h.body_len)
		return;
	memcpy(&p->ack, body, sizeof(p->ack));
	p->status = h.status;
}

void raw_auth(struct raw_peer *p, const struct tcp_auth *a)
{
	uint8_t mac[TCP_MAC_BYTES] = { 0 };

	if (a)
		tcp_auth_mac(a, TCP_AUTH_CLIENT, &p->hello, &p->ack, mac);
	raw_send(p, TCP_AUTH, 0, mac, sizeof(mac));
}

void raw_send(struct raw_peer *p, uint8_t type, uint32_t count, const void *body, size_t len)
{
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = type,
			     .count = count, .body_len = len, .seq = ++p->seq };

	send(p->fd, &h, sizeof(h), MSG_NOSIGNAL);
	if (len)
		send(p->fd, body, len, MSG_NOSIGNAL);
}

int raw_next(struct raw_peer *p, struct tcp_hdr *h, int ms)
{
	struct pollfd pf = { .fd = p->fd, .events = POLLIN };
	struct tcp_hdr tmp;
	ssize_t r;

	if (!h)
		h = &tmp;
	if (poll(&pf, 1, ms) != 1)
		return -1;
	r = recv(p->fd, h, sizeof(*h), MSG_WAITALL);
	if (r != (ssize_t)sizeof(*h))
		return 0;
	return h->type;
}

const char *raw_secret_file(int slot, const char *text)
{
	static char paths[4][600];
	FILE *f;

	snprintf(paths[slot], sizeof(paths[slot]), "%s/secret-%d", pc_test_tmpdir(), slot);
	f = fopen(paths[slot], "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "%s\n", text);
	fclose(f);
	chmod(paths[slot], 0600);
	return paths[slot];
}

void raw_auth_of(const char *path, struct tcp_auth *a)
{
	char yaml[1024], err[PC_ERR_MAX];
	struct pc_topology *t;

	snprintf(yaml, sizeof(yaml),
		 "store: {auth_secret_file: \"%s\"}\nnodes:\n  - {name: x, address: 127.0.0.1}\n",
		 path);
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(yaml, strlen(yaml), "secret", &t, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(tcp_auth_load(t, a, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(a->on);
	pc_topology_free(t);
}

uint64_t raw_rss(int pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}
