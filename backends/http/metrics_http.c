/*
 * metrics_http.c - the metrics endpoint: GET /metrics, /healthz and /readyz over
 * HTTP, served by libmicrohttpd on its own thread, so that a scrape never runs on
 * the fabric's event thread or a batch caller's.
 *
 * A scrape holds the attach lock for reading while it renders; attaching another
 * store (or none, before the store closes) takes it for writing, so a store is never
 * closed under a scrape.
 *
 * Not for: what the metrics are (core/metrics/expose.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <peercache/peercache.h>

#include "base/log.h"
#include "store.h"

#define HTTP_CONNECTIONS 256	/* concurrent scrapers */
#define HTTP_TIMEOUT_S 10

struct pc_metrics_server {
	struct MHD_Daemon *d;
	uint16_t port;
	pthread_rwlock_t lock;
	struct pc_store *store;		/* under lock */
	char why[128];			/* why not ready when store is NULL */
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	/* A 405 must say which methods the resource takes (RFC 9110 15.5.6). */
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

__attribute__((format(printf, 3, 4)))
static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;

	return reply(conn, status, "text/plain; charset=utf-8", buf, (size_t)n,
		     MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result on_metrics(struct pc_metrics_server *m, struct MHD_Connection *conn)
{
	static const char no_store[] =
		"# HELP peercache_ready 1 when the store serves and is a member of its ring.\n"
		"# TYPE peercache_ready gauge\npeercache_ready 0\n";
	struct pc_msg msg = { 0 };
	int ret = 0;

	pthread_rwlock_rdlock(&m->lock);
	if (m->store)
		ret = store_expose(m->store, &msg);
	else
		ret = pc_msg_append(&msg, no_store, strlen(no_store));
	pthread_rwlock_unlock(&m->lock);
	if (ret) {
		pc_msg_free(&msg);
		return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s\n", strerror(-ret));
	}
	/* MHD frees the body with free() once sent */
	return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", msg.data, msg.len,
		     MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result on_readyz(struct pc_metrics_server *m, struct MHD_Connection *conn)
{
	const char *why = NULL;
	char copy[128];
	int ret;

	pthread_rwlock_rdlock(&m->lock);
	ret = m->store ? store_ready(m->store, &why) : -ENODEV;
	snprintf(copy, sizeof(copy), "%s", m->store ? (why ? why : "") : m->why);
	pthread_rwlock_unlock(&m->lock);
	if (!ret)
		return text(conn, MHD_HTTP_OK, "ready\n");
	return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: %s\n", copy);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct pc_metrics_server *m = cls;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "%s: only GET and HEAD\n", method);
	if (!strcmp(url, "/metrics"))
		return on_metrics(m, conn);
	if (!strcmp(url, "/healthz"))
		return text(conn, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/readyz"))
		return on_readyz(m, conn);
	return text(conn, MHD_HTTP_NOT_FOUND, "%s: try /metrics, /healthz or /readyz\n", url);
}

/* libmicrohttpd's own error lines, into the library's log. fmt is its own format
 * string, checked as one. */
__attribute__((format(printf, 2, 0)))
static void mhd_log(void *arg, const char *fmt, va_list ap)
{
	char line[256];
	size_t n;

	(void)arg;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	pc_dbg("metrics endpoint: %s", line);
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char ps[8];
	int ret;

	snprintf(ps, sizeof(ps), "%u", port);
	ret = getaddrinfo(host, ps, &hints, &res);
	if (ret)
		return -EADDRNOTAVAIL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

int pc_metrics_serve(struct pc_store *s, const char *host, uint16_t port,
		     struct pc_metrics_server **out)
{
	struct pc_metrics_server *m;
	struct sockaddr_storage ss = { 0 };
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	int ret;

	if (!out)
		return -EINVAL;
	if (!host || !*host)
		host = "127.0.0.1";
	ret = resolve(host, port, &ss);
	if (ret)
		return ret;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_rwlock_init(&m->lock, NULL);
	m->store = s;
	snprintf(m->why, sizeof(m->why), "no store open");
	errno = 0;
	m->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)HTTP_CONNECTIONS,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_END);
	if (!m->d) {
		ret = errno ? -errno : -EADDRINUSE;
		pthread_rwlock_destroy(&m->lock);
		free(m);
		return ret;
	}
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : port;
	/* an IPv6 address goes in brackets in a URL (RFC 3986 3.2.2) */
	pc_info("metrics endpoint on http://%s%s%s:%u/metrics (also /healthz, /readyz)",
		strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", m->port);
	*out = m;
	return 0;
}

uint16_t pc_metrics_server_port(const struct pc_metrics_server *m)
{
	return m ? m->port : 0;
}

void pc_metrics_server_attach(struct pc_metrics_server *m, struct pc_store *s, const char *why)
{
	if (!m)
		return;
	pthread_rwlock_wrlock(&m->lock);
	m->store = s;
	snprintf(m->why, sizeof(m->why), "%s", why && *why ? why : "no store open");
	pthread_rwlock_unlock(&m->lock);
}

void pc_metrics_server_close(struct pc_metrics_server *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);
	pthread_rwlock_destroy(&m->lock);
	free(m);
}
