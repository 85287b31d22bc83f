// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Prometheus metrics: the text exposition format, version 0.0.4, rendered
 * by the daemon once per poll and served by libmicrohttpd's own thread.
 *
 * Every figure is per dependency (label `dependency`): the sum over the
 * destinations the last poll assigned to it, as in `depwatch status`. A
 * reload that moves a destination from one dependency to another moves its
 * counts along, which Prometheus sees as a counter reset of the one it left.
 *
 * This file serves the page (ADDR:PORT, libmicrohttpd, the swap of the
 * rendered buffer); metrics_render.c renders it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <microhttpd.h>
#include "host/log.h"
#include "logic/base/jsonw.h"
#include "output/metrics.h"
#include "output/metrics_render.h"

static struct {
	pthread_mutex_t lock;		/* guards cur only */
	struct dw_buf cur;		/* served */
	struct dw_buf next;		/* rendered by the daemon, then swapped with cur */
	struct MHD_Daemon *mhd;
	int listen_fd;			/* bound by start, MHD's from serve on */
	bool started, oom_logged;
	char addr[128];			/* as given, for messages */
} m = { .lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1 };

/* ---- ADDR:PORT */

int dw_metrics_parse_addr(const char *addr_port, struct sockaddr_storage *ss, socklen_t *len,
			  char *err, size_t errlen)
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	const char *colon, *port_s;
	unsigned long port = 0;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	if (addr_port[0] == '[') {
		const char *close = strchr(addr_port, ']');

		if (!close || close[1] != ':') {
			snprintf(err, errlen, "'%s' is not [IPV6]:PORT", addr_port);
			return -EINVAL;
		}
		hlen = close - addr_port - 1;
		if (hlen == 0 || hlen >= sizeof(host)) {
			snprintf(err, errlen, "'%s': no IPv6 address between the brackets", addr_port);
			return -EINVAL;
		}
		memcpy(host, addr_port + 1, hlen);
		host[hlen] = '\0';
		port_s = close + 2;
	} else {
		colon = strrchr(addr_port, ':');
		if (!colon) {
			snprintf(err, errlen, "'%s' is not ADDR:PORT (e.g. 127.0.0.1:9464 or [::1]:9464)",
				 addr_port);
			return -EINVAL;
		}
		if (memchr(addr_port, ':', colon - addr_port)) {
			snprintf(err, errlen, "'%s': an IPv6 address goes in brackets, as in [::1]:9464",
				 addr_port);
			return -EINVAL;
		}
		hlen = colon - addr_port;
		if (hlen == 0 || hlen >= sizeof(host)) {
			snprintf(err, errlen, "'%s' has no address before the port (e.g. 127.0.0.1:9464)",
				 addr_port);
			return -EINVAL;
		}
		memcpy(host, addr_port, hlen);
		host[hlen] = '\0';
		port_s = colon + 1;
	}
	if (!*port_s || strspn(port_s, "0123456789") != strlen(port_s) || strlen(port_s) > 5 ||
	    (port = strtoul(port_s, NULL, 10)) < 1 || port > 65535) {
		snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535", addr_port);
		return -EINVAL;
	}
	if (addr_port[0] != '[') {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
			snprintf(err, errlen, "'%s': '%s' is not an IPv4 address", addr_port, host);
			return -EINVAL;
		}
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
	} else {
		struct addrinfo hints = { .ai_family = AF_INET6, .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
		struct addrinfo *ai = NULL;

		/* getaddrinfo, unlike inet_pton, takes a scope: [fe80::1%eth0] */
		if (getaddrinfo(host, port_s, &hints, &ai) || !ai || ai->ai_addrlen > sizeof(*ss)) {
			if (ai)
				freeaddrinfo(ai);
			snprintf(err, errlen, "'%s': '%s' is not an IPv6 address", addr_port, host);
			return -EINVAL;
		}
		memcpy(ss, ai->ai_addr, ai->ai_addrlen);
		*len = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
	return 0;
}

/* ---- the HTTP side: libmicrohttpd's thread */

static const char content_type[] = "text/plain; version=0.0.4; charset=utf-8";

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body,
			     size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body,
								    MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? content_type : "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	static const char not_found[] = "not found: depwatch serves GET /metrics only\n";
	enum MHD_Result ret;

	(void)cls, (void)version, (void)upload_data, (void)upload_data_size, (void)con_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) || strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1);
	pthread_mutex_lock(&m.lock);
	ret = reply(conn, MHD_HTTP_OK, m.cur.data ? m.cur.data : "", m.cur.len);
	pthread_mutex_unlock(&m.lock);
	return ret;
}

static int listen_on(const char *addr_port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256];
	int one = 1, fd;

	if (dw_metrics_parse_addr(addr_port, &ss, &len, err, sizeof(err))) {
		dw_err("--metrics: %s", err);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		dw_err("--metrics: cannot listen on %s: %s", addr_port, strerror(errno));
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 64)) {
		int e = errno;

		dw_err("--metrics: cannot listen on %s: %s", addr_port, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int dw_metrics_start(const char *addr_port)
{
	int fd;

	if (m.started)
		return -EALREADY;
	fd = listen_on(addr_port);
	if (fd < 0)
		return fd;
	m.listen_fd = fd;
	m.started = true;
	snprintf(m.addr, sizeof(m.addr), "%s", addr_port);
	return 0;
}

int dw_metrics_serve(void)
{
	sigset_t all, old;

	if (!m.started || m.mhd)
		return m.started ? 0 : -EINVAL;
	/* The daemon takes its signals through a signalfd: the server thread must never get them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	m.mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, NULL,
				 MHD_OPTION_LISTEN_SOCKET, m.listen_fd,
				 MHD_OPTION_CONNECTION_LIMIT, 32U,
				 MHD_OPTION_CONNECTION_TIMEOUT, 10U,
				 MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!m.mhd) {
		dw_err("--metrics: cannot start the HTTP server on %s", m.addr);
		return -EIO;
	}
	dw_info("metrics on http://%s/metrics", m.addr);
	return 0;
}

void dw_metrics_stop(void)
{
	if (m.mhd)
		MHD_stop_daemon(m.mhd);	/* closes the listening socket too */
	else if (m.listen_fd >= 0)
		close(m.listen_fd);
	m.mhd = NULL;
	m.listen_fd = -1;
	m.started = false;
	dw_buf_free(&m.cur);
	dw_buf_free(&m.next);
	dw_metrics_render_free();
}

void dw_metrics_publish(const struct dw_collector *c, const struct dw_deps *deps,
			const struct dw_services *svcs, const struct dw_control_figs *control,
			unsigned max_series)
{
	struct dw_buf tmp;

	if (!m.started)
		return;
	m.next.len = 0;
	m.next.oom = 0;
	if (m.next.data)
		m.next.data[0] = '\0';
	if (dw_metrics_render(&m.next, c, deps, svcs, control, max_series)) {
		if (!m.oom_logged)
			dw_err("out of memory rendering the metrics: the last good ones are served");
		m.oom_logged = true;
		return;
	}
	m.oom_logged = false;
	pthread_mutex_lock(&m.lock);
	tmp = m.cur;
	m.cur = m.next;
	m.next = tmp;
	pthread_mutex_unlock(&m.lock);
}
