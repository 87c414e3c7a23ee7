#!/usr/bin/python3
"""A desktop notification server for tests: owns org.freedesktop.Notifications on the session
bus in DBUS_SESSION_BUS_ADDRESS (the Desktop Notifications Specification, version 1.2) and
appends each notification it is sent to OUT as one JSON line: app name, summary, body, icon,
category. It writes READY once it owns the name. Needs python3-gi (Debian's /usr/bin/python3).

  tools/notification-server.py OUT READY
"""
import json
import sys

from gi.repository import Gio, GLib

INTERFACE = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
    <method name="GetCapabilities"><arg type="as" direction="out"/></method>
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/>
      <arg type="u" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" direction="in"/></method>
  </interface>
</node>
"""

out_path, ready_path = sys.argv[1], sys.argv[2]
count = 0


def call(connection, sender, path, interface, method, params, invocation):
    global count
    if method == "GetServerInformation":
        invocation.return_value(GLib.Variant("(ssss)", ("test-server", "meishi", "1", "1.2")))
    elif method == "GetCapabilities":
        invocation.return_value(GLib.Variant("(as)", (["body", "body-markup"],)))
    elif method == "Notify":
        app, _, icon, summary, body, _, hints, _ = params.unpack()
        count += 1
        with open(out_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"app": app, "summary": summary, "body": body, "icon": icon,
                                "category": hints.get("category")}) + "\n")
        invocation.return_value(GLib.Variant("(u)", (count,)))
    else:
        invocation.return_value(None)


def acquired(connection, name):
    open(ready_path, "w").close()


bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
info = Gio.DBusNodeInfo.new_for_xml(INTERFACE).interfaces[0]
bus.register_object("/org/freedesktop/Notifications", info, call, None, None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.Notifications", Gio.BusNameOwnerFlags.NONE, acquired, None)
GLib.MainLoop().run()
