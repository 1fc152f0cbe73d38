"""What a neighbour announces is hostile input to discover: a name two devices claim, a Spark's
name from another chassis, a name heard as both a Spark and a switch, bytes no inventory key can
hold, several far ends on one port. Each is said, escaped, with where it was heard, and no cable
is written through it; nothing else is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkfab.discover.cables import HostView, derive
from sparkfab.discover.inventory import merge
from sparkfab.facts.neighbours import Neighbour

TWINS = ("enp1s0f1np1", "enP2p1s0f1np1")


def spark(label: str, far: list[Neighbour], macs: set[str] | None = None) -> HostView:
    ports = {t: [Neighbour(label, other, f"mac-{label}"), *far] for t, other in zip(TWINS, TWINS[::-1], strict=True)}
    return HostView(label, f"addr-{label}", hostname=label, chassis={label, f"mac-{label}"}, ports=ports,
                    fabric=list(TWINS), own_macs=macs or {f"mac-{label}"})  # fmt: skip


def test_two_devices_claiming_one_identity_are_named_and_cabled_nowhere():
    views = {
        "s0": spark("s0", [Neighbour("MikroTik", "qsfp56-dd-1-1", "04:00:00:00:00:01")]),
        "s1": spark("s1", [Neighbour("MikroTik", "qsfp56-dd-1-5", "04:00:00:00:00:99")]),
    }
    r = derive(views, list(views))
    assert r.cables == []
    assert any("MikroTik" in o and "2 devices" in o and "s0:" in o for o in r.odd), r.odd


def test_a_device_announcing_a_sparks_name_from_another_chassis_is_not_trusted():
    far = [Neighbour("b", t, "mac-b") for t in TWINS]
    evil = Neighbour("b", "enp1s0f0np0", "66:66:66:66:66:66")
    r = derive(
        {"a": spark("a", [*far, evil]), "b": spark("b", [Neighbour("a", t, "mac-a") for t in TWINS])}, ["a", "b"]
    )
    assert r.cables == [["a:p1", "b:p1"]]  # the real one is still found
    assert any("66:66:66:66:66:66" in o and "announces the name of b" in o for o in r.odd), r.odd


def test_a_port_that_hears_several_far_ends_gets_no_cable():
    views = {"a": spark("a", [Neighbour("b", TWINS[0], "mac-b"), Neighbour("c", TWINS[0], "mac-c")])}
    r = derive(views, ["a"])
    assert r.cables == [] and any("hears several far ends" in o and "no cable" in o for o in r.odd)


@given(st.text(min_size=1, max_size=300))
@settings(max_examples=200)
def test_any_announced_name_is_said_escaped_and_never_written_raw(name: str):
    views = {"s0": spark("s0", [Neighbour(name, f"weird\n{name}", "04:00:00:00:00:01", name)])}
    r = derive(views, ["s0"])
    for line in r.odd:
        assert line.isprintable(), line  # no newline, escape, bidi control, NUL: escaped
    written = merge(None, r, "x")
    assert "\x1b" not in written and "\x00" not in written and "\u202e" not in written
