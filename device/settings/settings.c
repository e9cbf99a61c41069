/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settings.c — rearview-settings, the consent panel (GTK 4): what Rearview
 * does in plain words, the consent choice, this week's uploads and what is
 * waiting, and "Delete everything collected" (with a confirmation).
 *
 * It talks only D-Bus: org.rearview.Daemon1 on the system bus
 * (deploy/dbus/org.rearview.Daemon1.xml) through a GDBusProxy; polkit
 * decides every change inside the daemon, and a refusal is shown as a
 * sentence (errors.c), never as the raw D-Bus error.  The window fits a 7-inch 800×480 kiosk
 * screen; every control has a label screen readers announce and a keyboard mnemonic; every string
 * is marked for gettext (textdomain "rearview-settings").
 *
 * Self-test mode (REARVIEW_SETTINGS_SELFTEST=DIR, used by
 * tests/device/test_dbus.c under Weston's headless backend): the panel
 * drives itself through its own widgets — full consent chosen, delete
 * asked, confirmed — printing "selftest: consent=…" lines and saving a PNG
 * of each state in DIR (its widget tree as drawn, rendered by GSK); exit 0
 * when every step was answered.
 *
 * Invariants:
 *  - the radio buttons always show the daemon's Consent: they are set from
 *    the property (and its PropertiesChanged), never left at a choice the
 *    daemon refused (`syncing` keeps those updates from calling back);
 *  - one change (SetConsent, DeleteAllData) at a time (`busy`): the
 *    controls are insensitive meanwhile; no call blocks the GTK main loop
 *    once the window is up (only the proxy is made synchronously, before).
 */
#include <gio/gio.h>
#include <glib/gi18n.h>

#include "errors.h"
#include <gtk/gtk.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "rearview/common.h"

#define NAME  "org.rearview.Daemon1"
#define PATH  "/org/rearview/Daemon1"
#define IFACE "org.rearview.Daemon1"

#define NLEVELS 4
static const char *const levels[NLEVELS] = {"off", "local", "summary", "full"};

struct panel {
	GtkApplication *app;
	GtkWindow *win;
	GDBusProxy *proxy; /* NULL until connected */
	GtkWidget *radios[NLEVELS];
	GtkWidget *quota, *counts, *message, *delete_btn;
	GtkWidget *confirm; /* the open confirmation dialog, or NULL */
	gboolean syncing, busy;
	/* self-test */
	const char *selftest_dir; /* non-NULL: self-test mode, screenshots here */
	int step;
	guint timeout;
};

static void selftest_next(struct panel *p);

static int level_index(const char *s)
{
	for (int i = 0; i < NLEVELS; i++)
		if (s && !strcmp(s, levels[i]))
			return i;
	return -1;
}

static void set_busy(struct panel *p, gboolean busy)
{
	p->busy = busy;
	for (int i = 0; i < NLEVELS; i++)
		gtk_widget_set_sensitive(p->radios[i], !busy && p->proxy);
	gtk_widget_set_sensitive(p->delete_btn, !busy && p->proxy);
}

/* The property `name` from a Properties.Get answer, or NULL (logged). */
static GVariant *get_finish(GObject *src, GAsyncResult *res, const char *name)
{
	GError *err = NULL;
	GVariant *v = g_dbus_proxy_call_finish(G_DBUS_PROXY(src), res, &err), *inner = NULL;

	if (!v) {
		g_warning("reading %s: %s", name, err->message);
		g_clear_error(&err);
		return NULL;
	}
	g_variant_get(v, "(v)", &inner);
	g_variant_unref(v);
	return inner;
}

/* Shows QuotaLeft ("u"). */
static void quota_show(struct panel *p, GVariant *v)
{
	char buf[256];
	guint32 n = g_variant_get_uint32(v);

	snprintf(buf, sizeof(buf),
		 ngettext("%u upload still allowed this week", "%u uploads still allowed this week",
			  n),
		 n);
	gtk_label_set_text(GTK_LABEL(p->quota), buf);
}

/* Shows Counts ("a{su}": sent, waiting, kept, skipped) as three counts. */
static void counts_show(struct panel *p, GVariant *v)
{
	guint32 sent = 0, waiting = 0, kept = 0;
	char buf[256];

	/* A key the daemon does not send stays 0. */
	g_variant_lookup(v, "sent", "u", &sent);
	g_variant_lookup(v, "waiting", "u", &waiting);
	g_variant_lookup(v, "kept", "u", &kept);
	snprintf(buf, sizeof(buf),
		 _("Sent: %u    Waiting to be sent: %u    Kept on this device: %u"), sent, waiting,
		 kept);
	gtk_label_set_text(GTK_LABEL(p->counts), buf);
}

static void quota_read(GObject *src, GAsyncResult *res, gpointer data)
{
	GVariant *v = get_finish(src, res, "QuotaLeft");

	if (!v)
		return;
	quota_show(data, v);
	g_variant_unref(v);
}

static void counts_read(GObject *src, GAsyncResult *res, gpointer data)
{
	GVariant *v = get_finish(src, res, "Counts");

	if (!v)
		return;
	counts_show(data, v);
	g_variant_unref(v);
}

/* Shows the property `name` from the proxy's cache when it holds it with the
 * type the interface gives (the daemon sends every change with its value
 * in PropertiesChanged), else asks the daemon for it, asynchronously. */
static void show_property(struct panel *p, const char *name, const char *type,
			  void (*show)(struct panel *, GVariant *), GAsyncReadyCallback read)
{
	GVariant *v = g_dbus_proxy_get_cached_property(p->proxy, name);

	if (v && g_variant_is_of_type(v, G_VARIANT_TYPE(type))) {
		show(p, v);
		g_variant_unref(v);
		return;
	}
	if (v)
		g_variant_unref(v);
	g_dbus_proxy_call(p->proxy, "org.freedesktop.DBus.Properties.Get",
			  g_variant_new("(ss)", IFACE, name), G_DBUS_CALL_FLAGS_NONE, -1, NULL,
			  read, p);
}

/* Shows the daemon's properties, from the proxy's cache, which
 * PropertiesChanged keeps current (Consent, QuotaLeft and Counts all
 * signal their changes with the new value; the capture list itself is
 * not needed here, and is only invalidated in those signals). */
static void refresh(struct panel *p)
{
	GVariant *v;

	if (!p->proxy)
		return;
	v = g_dbus_proxy_get_cached_property(p->proxy, "Consent");
	if (v) {
		int i = level_index(g_variant_get_string(v, NULL));

		p->syncing = TRUE;
		if (i >= 0)
			gtk_check_button_set_active(GTK_CHECK_BUTTON(p->radios[i]), TRUE);
		p->syncing = FALSE;
		g_variant_unref(v);
	}
	show_property(p, "QuotaLeft", "u", quota_show, quota_read);
	show_property(p, "Counts", "a{su}", counts_show, counts_read);
}

static void show_message(struct panel *p, const char *what, const GError *err)
{
	if (!err) {
		gtk_label_set_text(GTK_LABEL(p->message), what);
		return;
	}
	/* A sentence, never the raw D-Bus error (logged for whoever debugs). */
	g_message("%s", err->message);
	gtk_label_set_text(GTK_LABEL(p->message), settings_error_text(err));
}

static void set_consent_done(GObject *src, GAsyncResult *res, gpointer data)
{
	struct panel *p = data;
	GError *err = NULL;
	GVariant *v = g_dbus_proxy_call_finish(G_DBUS_PROXY(src), res, &err);

	set_busy(p, FALSE);
	show_message(p, _("Saved."), err);
	if (v)
		g_variant_unref(v);
	g_clear_error(&err);
	refresh(p); /* a refused choice goes back to the daemon's */
	if (p->selftest_dir)
		selftest_next(p);
}

static void radio_toggled(GtkCheckButton *b, gpointer data)
{
	struct panel *p = data;
	int i;

	if (p->syncing || !gtk_check_button_get_active(b) || !p->proxy)
		return;
	for (i = 0; i < NLEVELS && p->radios[i] != GTK_WIDGET(b); i++)
		;
	g_assert(i < NLEVELS);
	set_busy(p, TRUE);
	g_dbus_proxy_call(p->proxy, "SetConsent", g_variant_new("(s)", levels[i]),
			  G_DBUS_CALL_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION, -1, NULL,
			  set_consent_done, p);
}

static void delete_done(GObject *src, GAsyncResult *res, gpointer data)
{
	struct panel *p = data;
	GError *err = NULL;
	GVariant *v = g_dbus_proxy_call_finish(G_DBUS_PROXY(src), res, &err);

	set_busy(p, FALSE);
	show_message(p, _("Everything collected was deleted."), err);
	if (v)
		g_variant_unref(v);
	g_clear_error(&err);
	refresh(p);
	if (p->selftest_dir)
		selftest_next(p);
}

static void confirm_response(GtkDialog *d, int response, gpointer data)
{
	struct panel *p = data;

	gtk_window_destroy(GTK_WINDOW(d));
	p->confirm = NULL;
	if (response != GTK_RESPONSE_ACCEPT) {
		if (p->selftest_dir)
			selftest_next(p);
		return;
	}
	set_busy(p, TRUE);
	g_dbus_proxy_call(p->proxy, "DeleteAllData", NULL,
			  G_DBUS_CALL_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION, -1, NULL, delete_done,
			  p);
}

static void delete_clicked(GtkButton *b, gpointer data)
{
	struct panel *p = data;
	GtkWidget *d = gtk_message_dialog_new(
		p->win, GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT, GTK_MESSAGE_WARNING,
		GTK_BUTTONS_NONE, "%s", _("Delete everything Rearview collected?"));

	gtk_message_dialog_format_secondary_text(
		GTK_MESSAGE_DIALOG(d), "%s",
		_("The recordings kept on this device and those waiting to be sent are "
		  "deleted. This cannot be undone. Your choice above stays as it is."));
	gtk_dialog_add_buttons(GTK_DIALOG(d), _("_Cancel"), GTK_RESPONSE_CANCEL, _("_Delete"),
			       GTK_RESPONSE_ACCEPT, NULL);
	gtk_dialog_set_default_response(GTK_DIALOG(d), GTK_RESPONSE_CANCEL);
	g_signal_connect(d, "response", G_CALLBACK(confirm_response), p);
	p->confirm = d;
	gtk_window_present(GTK_WINDOW(d));
}

static void props_changed(GDBusProxy *proxy, GVariant *changed, GStrv invalidated, gpointer data)
{
	refresh(data);
}

/* ---- self-test --------------------------------------------------------------- */

/* Renders the window `w` into DIR/NAME.png: its widget tree as last
 * drawn, through a cairo renderer of its own (as on a device without GL). */
static gboolean shoot(struct panel *p, GtkWidget *w, const char *name)
{
	int width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
	GtkWidget *content = gtk_window_get_child(GTK_WINDOW(w));
	GtkSnapshot *snap = gtk_snapshot_new();
	GskRenderer *r = gsk_cairo_renderer_new();
	GskRenderNode *node;
	GdkTexture *tex = NULL;
	const char *failed = NULL;
	char path[512];

	/* The window's background, then its content as laid out. */
	gtk_snapshot_append_color(snap, &(GdkRGBA){0.96f, 0.96f, 0.96f, 1},
				  &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
	gtk_widget_snapshot_child(w, content, snap);
	node = gtk_snapshot_free_to_node(snap);
	snprintf(path, sizeof(path), "%s/%s.png", p->selftest_dir, name);
	if (!gsk_renderer_realize(r, NULL, NULL))
		failed = "no renderer";
	else if (!node)
		failed = "nothing drawn";
	else if (!(tex = gsk_renderer_render_texture(
			   r, node, &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height))))
		failed = "not rendered";
	else if (!gdk_texture_save_to_png(tex, path))
		failed = "not written";
	if (tex)
		g_object_unref(tex);
	if (node)
		gsk_render_node_unref(node);
	if (gsk_renderer_is_realized(r))
		gsk_renderer_unrealize(r);
	g_object_unref(r);
	printf("selftest: screenshot %s %s (%dx%d)\n", path, failed ? failed : "saved", width,
	       height);
	fflush(stdout);
	return !failed;
}

static void print_consent(struct panel *p)
{
	GVariant *v = g_dbus_proxy_get_cached_property(p->proxy, "Consent");

	printf("selftest: consent=%s\n", v ? g_variant_get_string(v, NULL) : "?");
	printf("selftest: counts=%s\n", gtk_label_get_text(GTK_LABEL(p->counts)));
	fflush(stdout);
	if (v)
		g_variant_unref(v);
}

static gboolean selftest_step(gpointer data)
{
	struct panel *p = data;

	p->timeout = 0;
	switch (p->step++) {
	case 0: /* as it opened, once it has its size */
		if (!gtk_widget_get_mapped(GTK_WIDGET(p->win)) ||
		    gtk_widget_get_width(GTK_WIDGET(p->win)) <= 0) {
			p->step--;
			p->timeout = g_timeout_add(100, selftest_step, p);
			return G_SOURCE_REMOVE;
		}
		print_consent(p);
		shoot(p, GTK_WIDGET(p->win), "settings-1-start");
		gtk_check_button_set_active(GTK_CHECK_BUTTON(p->radios[3]), TRUE); /* full */
		return G_SOURCE_REMOVE; /* set_consent_done continues */
	case 1:
		print_consent(p);
		shoot(p, GTK_WIDGET(p->win), "settings-2-full");
		gtk_widget_activate(p->delete_btn);
		p->timeout = g_timeout_add(300, selftest_step, p);
		return G_SOURCE_REMOVE;
	case 2: /* the confirmation is up, once it has its size (mapped comes first) */
		if (!p->confirm || !gtk_widget_get_mapped(p->confirm) ||
		    gtk_widget_get_width(p->confirm) <= 0 ||
		    gtk_widget_get_width(gtk_window_get_child(GTK_WINDOW(p->confirm))) <= 0) {
			p->step--;
			p->timeout = g_timeout_add(100, selftest_step, p);
			return G_SOURCE_REMOVE;
		}
		shoot(p, p->confirm, "settings-3-confirm");
		gtk_dialog_response(GTK_DIALOG(p->confirm), GTK_RESPONSE_ACCEPT);
		return G_SOURCE_REMOVE; /* delete_done continues */
	default:
		print_consent(p);
		shoot(p, GTK_WIDGET(p->win), "settings-4-deleted");
		printf("selftest: done\n");
		g_application_quit(G_APPLICATION(p->app));
		return G_SOURCE_REMOVE;
	}
}

/* The next step once the window had a frame to draw the last change. */
static void selftest_next(struct panel *p)
{
	if (!p->timeout)
		p->timeout = g_timeout_add(300, selftest_step, p);
}

/* ---- window -------------------------------------------------------------------- */

static GtkWidget *label(const char *text, const char *css)
{
	GtkWidget *l = gtk_label_new(text);

	gtk_label_set_wrap(GTK_LABEL(l), TRUE);
	gtk_label_set_xalign(GTK_LABEL(l), 0);
	if (css)
		gtk_widget_add_css_class(l, css);
	return l;
}

static void build(struct panel *p)
{
	static const char *const texts[NLEVELS] = {
		N_("_Off: record nothing"),
		N_("_Keep recordings on this device only"),
		N_("Send _summaries only (which parts of the program were slow)"),
		N_("Send _full recordings to the developers"),
	};
	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 10);
	GtkWidget *heading, *choice, *scroll;

	gtk_widget_set_margin_start(box, 24);
	gtk_widget_set_margin_end(box, 24);
	gtk_widget_set_margin_top(box, 16);
	gtk_widget_set_margin_bottom(box, 16);
	gtk_box_append(GTK_BOX(box), label(_("Performance recording"), "title-2"));
	gtk_box_append(
		GTK_BOX(box),
		label(_("When an app on this device stutters or answers a touch slowly, Rearview "
			"keeps a record of the few seconds before it: which parts of the program "
			"were running, and for how long. It never records what you type or what "
			"is on the screen. You decide what happens to these records."),
		      NULL));
	heading = label(_("What may Rearview do?"), "heading");
	gtk_box_append(GTK_BOX(box), heading);
	choice = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
	for (int i = 0; i < NLEVELS; i++) {
		p->radios[i] = gtk_check_button_new_with_mnemonic(_(texts[i]));
		if (i)
			gtk_check_button_set_group(GTK_CHECK_BUTTON(p->radios[i]),
						   GTK_CHECK_BUTTON(p->radios[0]));
		g_signal_connect(p->radios[i], "toggled", G_CALLBACK(radio_toggled), p);
		gtk_box_append(GTK_BOX(choice), p->radios[i]);
	}
	/* Screen readers announce the group by its heading; each radio button,
	 * the delete button and the labels by their own text. */
	gtk_accessible_update_relation(GTK_ACCESSIBLE(choice), GTK_ACCESSIBLE_RELATION_LABELLED_BY,
				       heading, NULL, -1);
	gtk_box_append(GTK_BOX(box), choice);
	p->quota = label("", NULL);
	p->counts = label("", NULL);
	gtk_box_append(GTK_BOX(box), p->quota);
	gtk_box_append(GTK_BOX(box), p->counts);
	p->delete_btn = gtk_button_new_with_mnemonic(_("_Delete everything collected"));
	gtk_widget_add_css_class(p->delete_btn, "destructive-action");
	gtk_widget_set_halign(p->delete_btn, GTK_ALIGN_START);
	g_signal_connect(p->delete_btn, "clicked", G_CALLBACK(delete_clicked), p);
	gtk_box_append(GTK_BOX(box), p->delete_btn);
	p->message = label("", NULL);
	gtk_box_append(GTK_BOX(box), p->message);
	/* 800×480: the text scrolls rather than pushing the controls off. */
	scroll = gtk_scrolled_window_new();
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scroll), GTK_POLICY_NEVER,
				       GTK_POLICY_AUTOMATIC);
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), box);
	gtk_window_set_child(p->win, scroll);
}

static void activate(GtkApplication *app, gpointer data)
{
	struct panel *p = data;
	GError *err = NULL;

	p->win = GTK_WINDOW(gtk_application_window_new(app));
	gtk_window_set_title(p->win, _("Rearview settings"));
	gtk_window_set_default_size(p->win, 800, 480);
	build(p);
	p->proxy = g_dbus_proxy_new_for_bus_sync(G_BUS_TYPE_SYSTEM, G_DBUS_PROXY_FLAGS_NONE, NULL,
						 NAME, PATH, IFACE, NULL, &err);
	if (p->proxy && !g_dbus_proxy_get_name_owner(p->proxy))
		g_clear_object(&p->proxy);
	if (!p->proxy) {
		gtk_label_set_text(GTK_LABEL(p->message),
				   _("The Rearview service is not running on this device."));
		g_clear_error(&err);
	} else {
		g_signal_connect(p->proxy, "g-properties-changed", G_CALLBACK(props_changed), p);
	}
	set_busy(p, FALSE);
	refresh(p);
	gtk_window_present(p->win);
	if (p->selftest_dir) {
		if (!p->proxy) {
			printf("selftest: no service\n");
			g_application_quit(G_APPLICATION(app));
			return;
		}
		selftest_next(p);
	}
}

/* --version, handled before GTK starts (no display needed). */
static gint local_options(GApplication *app, GVariantDict *opts, gpointer data)
{
	if (g_variant_dict_contains(opts, "version"))
		return rvc_print_version("rearview-settings");
	return -1; /* go on: activate */
}

int main(int argc, char **argv)
{
	struct panel p = {0};
	int status;

	setlocale(LC_ALL, "");
	bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
	bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
	textdomain(GETTEXT_PACKAGE);
	p.selftest_dir = g_getenv("REARVIEW_SETTINGS_SELFTEST");
	p.app = gtk_application_new("org.rearview.Settings", G_APPLICATION_NON_UNIQUE);
	g_application_add_main_option(G_APPLICATION(p.app), "version", 0, G_OPTION_FLAG_NONE,
				      G_OPTION_ARG_NONE, _("Print the version and exit"), NULL);
	g_signal_connect(p.app, "handle-local-options", G_CALLBACK(local_options), NULL);
	g_signal_connect(p.app, "activate", G_CALLBACK(activate), &p);
	status = g_application_run(G_APPLICATION(p.app), argc, argv);
	g_clear_object(&p.proxy);
	g_object_unref(p.app);
	if (p.selftest_dir && status == 0 && p.step < 4)
		status = 1;
	return status;
}
