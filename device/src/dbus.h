/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbus.h — rearviewd on the system D-Bus: org.rearview.Daemon1 at
 * /org/rearview/Daemon1 (deploy/dbus/org.rearview.Daemon1.xml), with
 * SetConsent and DeleteAllData authorised by polkit
 * (org.rearview.consent.set, org.rearview.data.delete).
 *
 * sd-bus is driven from the daemon's libuv loop (uv_poll on the bus
 * descriptor, a uv_timer for its timeouts); every polkit check is an
 * asynchronous call.  The consent change and the purge are admin.c's
 * (rvd_admin_set_consent, rvd_admin_delete_all): this file holds no copy of
 * either.  Everything here runs on the loop thread.
 */
#ifndef RVD_DBUS_H
#define RVD_DBUS_H

#include <systemd/sd-bus.h>
#include <uv.h>

#include "admin.h"

#define RVD_DBUS_NAME	   "org.rearview.Daemon1"
#define RVD_DBUS_PATH	   "/org/rearview/Daemon1"
#define RVD_DBUS_INTERFACE "org.rearview.Daemon1"

struct rvd_dbus;

/*
 * Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS, else the standard
 * socket), exports the object and asks for RVD_DBUS_NAME.  `env` is
 * borrowed and must outlive the returned object.  Returns 0 with *out set,
 * or a negative errno with *out NULL: -ENOENT/-ECONNREFUSED when there is
 * no system bus (the caller logs it once and runs without), -ENOMEM, or
 * sd-bus's error.  A bus that goes away later is logged and dropped; the
 * daemon keeps running.
 */
int rvd_dbus_start(uv_loop_t *loop, struct rvd_admin_env *env, struct rvd_dbus **out);

/*
 * As rvd_dbus_start on a connection the caller opened and started: `bus`
 * (taken, also on failure) may be a bus client (the name is then asked
 * for) or one end of a direct peer-to-peer connection (no name; the fuzz
 * target and tests drive the handlers through libsystemd's marshalling
 * this way, the peer answering for polkit).  Errors as rvd_dbus_start's.
 */
int rvd_dbus_start_bus(uv_loop_t *loop, struct rvd_admin_env *env, sd_bus *bus,
		       struct rvd_dbus **out);

/* The consent changed (from any channel): emits PropertiesChanged for
 * Consent.  NULL or a dropped bus: no-op. */
void rvd_dbus_consent_changed(struct rvd_dbus *b);

/* A capture was spooled, changed state or was purged, or the week's quota
 * moved: PropertiesChanged for QuotaLeft and Captures (with their new
 * values) follows within 100 ms, one signal for any number of changes in
 * that time.  NULL or a dropped bus: no-op. */
void rvd_dbus_spool_changed(struct rvd_dbus *b);

/* Closes the connection and the loop handles; the loop returns once they
 * are closed.  Checks still waiting on polkit are dropped unanswered; a
 * change already under way completes without an answer.  NULL: no-op;
 * idempotent. */
void rvd_dbus_stop(struct rvd_dbus *b);

/* Frees `b` after rvd_dbus_stop and after the loop returned.  NULL: no-op. */
void rvd_dbus_free(struct rvd_dbus *b);

#endif
