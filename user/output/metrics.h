/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `depwatch run --metrics ADDR:PORT`: GET /metrics in the Prometheus text
 * exposition format (version 0.0.4), per dependency.
 *
 * The daemon stays single-threaded in what it owns: it renders the whole
 * text once per poll (dw_metrics_publish) into a spare buffer and swaps it
 * in under a mutex. libmicrohttpd's own thread only copies the current
 * buffer under that mutex; it never looks at the collector or the deps.
 */
#ifndef DW_METRICS_H
#define DW_METRICS_H

#include <stddef.h>
#include <sys/socket.h>

struct dw_collector;
struct dw_control_figs;
struct dw_deps;
struct dw_services;

/*
 * "127.0.0.1:9464", "[::1]:9464", "[fe80::1%eth0]:9464" (port 1-65535,
 * numeric addresses only). 0, or -EINVAL with a one-line reason in err.
 */
int dw_metrics_parse_addr(const char *addr_port, struct sockaddr_storage *ss, socklen_t *len,
			  char *err, size_t errlen);

/*
 * Binds and listens, early (root may still bind a port below 1024, and a
 * port in use fails the start before anything is loaded); the figures are
 * rendered from the next publish on. 0, or a negative errno, logged.
 */
int dw_metrics_start(const char *addr_port);

/*
 * Starts libmicrohttpd's thread on that socket. Called once the daemon has
 * dropped its capabilities: a thread keeps the ones it was created with.
 * 0, or a negative errno, logged.
 */
int dw_metrics_serve(void);

/*
 * After each poll: renders every metric and makes it the one served. A
 * no-op when not started. max_series: --max-series N, per family the
 * configured dependencies and the busiest keep their own series, the rest
 * are summed into one "~other" (depwatch_series_folded says how many;
 * logic/view/series.h). 0: no cap.
 */
void dw_metrics_publish(const struct dw_collector *c, const struct dw_deps *deps,
			const struct dw_services *svcs, const struct dw_control_figs *control,
			unsigned max_series);

/* Stops the server, frees everything; safe when not started, and twice. */
void dw_metrics_stop(void);

#endif /* DW_METRICS_H */
