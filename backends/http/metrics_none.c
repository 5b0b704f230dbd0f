/*
 * metrics_none.c - the metrics endpoint's API in a library built without it
 * (PC_METRICS_HTTP=OFF, for programs linked fully -static): serving fails with
 * -ENOTSUP and says why once; the rest does nothing with the NULL it gets. The
 * counters themselves (pc_store_metrics, pc_store_metrics_text) are all there.
 */
#include <errno.h>

#include <peercache/peercache.h>

#include "base/log.h"

int pc_metrics_serve(struct pc_store *s, const char *host, uint16_t port,
		     struct pc_metrics_server **out)
{
	(void)s;
	(void)port;
	if (out)
		*out = NULL;
	pc_warn("metrics endpoint on %s: this library was built without it (PC_METRICS_HTTP=OFF)",
		host && *host ? host : "127.0.0.1");
	return -ENOTSUP;
}

uint16_t pc_metrics_server_port(const struct pc_metrics_server *m)
{
	(void)m;
	return 0;
}

void pc_metrics_server_attach(struct pc_metrics_server *m, struct pc_store *s, const char *why)
{
	(void)m;
	(void)s;
	(void)why;
}

void pc_metrics_server_close(struct pc_metrics_server *m)
{
	(void)m;
}
