// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <syslog.h>
#include <time.h>
#include "alert.h"
#include "log.h"
#include "logic/jsonw.h"
#include "logic/parse.h"

static FILE *events_out;
static int log_facility = LOG_DAEMON;

void dw_alert_open(int facility, FILE *events)
{
	log_facility = facility;
	events_out = events;
	openlog("depwatch", LOG_PID | LOG_NDELAY, facility);
}

void dw_alert_set_facility(int facility)
{
	if (facility == log_facility)
		return;
	closelog();
	dw_alert_open(facility, events_out);
}

void dw_alert_close(void)
{
	closelog();
	if (events_out && events_out != stdout)
		fclose(events_out);
	events_out = NULL;
}

static void ms_pair(struct dw_buf *b, const char *key, double ms)
{
	if (ms >= 0)
		dw_buf_printf(b, " %s=%.0f", key, ms);
}

/* The syslog body: key=value pairs, every string escaped so it cannot forge a pair or a line. */
static void format_line(struct dw_buf *b, const struct dw_alert *a)
{
	char slow_call[DW_DURATION_STRLEN];

	dw_format_duration(a->slow_call_ns, slow_call, sizeof(slow_call));
	dw_buf_printf(b, "dependency=");
	dw_escape_text(b, a->dependency, 256);
	if (a->event[0] == 'w')
		dw_buf_printf(b, " warning=%s state=%s", a->reason, a->state);
	else
		dw_buf_printf(b, " state=%s from=%s reason=%s", a->state, a->from, a->reason);
	dw_buf_printf(b, " slow_rate=%.2f failure_rate=%.2f slow_call=%s calls=%llu inflight=%llu",
		      a->slow_rate, a->failure_rate, slow_call, (unsigned long long)a->calls,
		      (unsigned long long)a->inflight);
	if (a->max_inflight)
		dw_buf_printf(b, " max_inflight=%u", a->max_inflight);
	ms_pair(b, "oldest_ms", a->oldest_ms);
	ms_pair(b, "p99_ms", a->p99_ms);
	if (a->suppressed)
		dw_buf_printf(b, " suppressed=%u", a->suppressed);
}


static void format_json(struct dw_buf *b, const struct dw_alert *a)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	dw_buf_printf(b, "{\"time\":%lld.%03ld,\"event\":\"%s\",\"dependency\":", (long long)ts.tv_sec,
		      ts.tv_nsec / 1000000, a->event);
	dw_json_str(b, a->dependency);
	dw_buf_printf(b, ",\"state\":\"%s\",\"reason\":\"%s\"", a->state, a->reason);
	if (a->from)
		dw_buf_printf(b, ",\"from\":\"%s\"", a->from);
	dw_buf_printf(b, ",\"slow_rate\":%.4f,\"failure_rate\":%.4f,\"slow_call_ms\":%.3f,"
		      "\"calls\":%llu,\"inflight\":%llu,\"max_inflight\":%u",
		      a->slow_rate, a->failure_rate, a->slow_call_ns / 1e6, (unsigned long long)a->calls,
		      (unsigned long long)a->inflight, a->max_inflight);
	dw_json_field_opt(b, "oldest_ms", a->oldest_ms, 1);
	dw_json_field_opt(b, "p99_ms", a->p99_ms, 1);
	dw_buf_printf(b, ",\"suppressed\":%u}\n", a->suppressed);
}

void dw_alert_emit(const struct dw_alert *a)
{
	struct dw_buf line = {};

	format_line(&line, a);
	if (!line.oom) {
		syslog(a->severity, "%s", line.data);
		dw_log(a->severity, "%s", line.data);
	}
	dw_buf_free(&line);
	if (!events_out)
		return;
	format_json(&line, a);
	if (!line.oom) {
		fwrite(line.data, 1, line.len, events_out);
		fflush(events_out);
	}
	dw_buf_free(&line);
}

void dw_alert_note(int severity, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	syslog(severity, "%s", line);
	dw_log(severity, "%s", line);
}
