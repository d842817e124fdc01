#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_rendezvous (tests/fuzz/corpus/rendezvous/).

Each seed is a program in the input layout that tests/fuzz/fuzz_rendezvous.c
describes; the helpers below name its operations so the seeds read as what
they do. Run it again after changing that layout.
"""
import os
import struct

OWN, MAIN, ALT = 0, 0, 255
REGISTER, LOOKUP, ANSWER, WHOAMI = 0, 1, 2, 3


def handshake(node, how=0, ciphers=0, src=OWN, sock=MAIN, damage=(0, 0)):
    b = bytes([0, node, how, ciphers, src, sock])
    return b + (bytes(damage) if how == 3 else b"")


def ctrl(node, kind, key=None, flags=0, n_cands=0, answer_last=False, wrong_key=None, cmode=0,
         damage=0, src=OWN, sock=MAIN, raw=None):
    if raw is not None:  # any plaintext: kind >= 240
        b = bytes([1, node, 240, len(raw)]) + raw
    else:
        b = bytes([1, node, kind])
        if kind == ANSWER and answer_last and wrong_key is not None:
            b += bytes([150, wrong_key])  # the ASK's id, about another key
        elif kind == ANSWER and answer_last:
            b += bytes([0])  # mode < 150: the ASK the node got, about its asker
        else:
            b += bytes([0, 7])  # mode < 128: a one-byte id
            b += bytes([key if key is not None else 5]) + (b"\x33" * 32 if key is None else b"")
        b += bytes([flags, 2]) + struct.pack("<QIH", 0, 0, 0) + bytes([OWN])
        b += bytes([n_cands]) + bytes([0, OWN]) * n_cands + struct.pack("<QI", 0, 0)
    b += bytes([cmode]) + (b"\x03" if cmode == 6 else b"\x00\x01" if cmode == 7 else b"")
    b += bytes([damage]) + (b"\x01\x02\x03\x04" if 230 <= damage < 240 else b"")
    return b + bytes([src, sock])


def relay(frm, to, plen, repeats=1, token=0, src=OWN, sock=MAIN):
    b = bytes([2, frm, token, to, 0]) + struct.pack("<H", plen) + bytes([repeats - 1, src, sock])
    return b + bytes(range(min(plen, 64)))


def raw(type_index, data, src_node=0, sock=MAIN, probe=None):
    """probe: with obf_psk (config bit 32) only, 1 sends the datagram unobfuscated."""
    return bytes([3, type_index]) + struct.pack("<H", len(data)) + bytes([src_node, OWN, sock]) \
        + data + (b"\x01" if type_index == 1 else b"") \
        + (bytes([probe]) if probe is not None else b"")


def wait(step, times=1, run_timers=False):
    return bytes([4, step + 8 * (times - 1) + (200 if run_timers and step < 8 else 0)])


def joined(*nodes):
    return b"".join(handshake(n) + ctrl(n, REGISTER, flags=1, n_cands=1) for n in nodes)


introduced = joined(0, 1, 2) + ctrl(0, LOOKUP, key=1) + ctrl(1, ANSWER, flags=1, answer_last=True)

seeds = {
    "introduce_and_relay": bytes([0]) + introduced + relay(0, 1, 1400, repeats=8)
    + relay(1, 0, 200) + relay(2, 1, 100) + relay(0, 1, 100, src=205)
    + ctrl(2, WHOAMI, sock=ALT) + ctrl(0, WHOAMI),
    "relay_rate": bytes([2]) + introduced + relay(0, 1, 1400, repeats=40) + wait(3)
    + relay(0, 1, 1400, repeats=4),
    "relay_off": bytes([1]) + introduced + relay(0, 1, 500, repeats=2),
    "declined_and_expiry": bytes([0]) + joined(0, 1, 3) + ctrl(0, LOOKUP, key=1)
    + ctrl(1, ANSWER, flags=0, answer_last=True) + ctrl(3, LOOKUP, key=0) + wait(4)
    + ctrl(0, LOOKUP, key=2) + wait(6) + wait(7) + ctrl(1, REGISTER),
    "limits": bytes([4 | 8 | 16]) + handshake(0) + handshake(1) + handshake(2) + handshake(0)
    + wait(3) + handshake(2) + handshake(3),
    "bad_inits": bytes([0]) + handshake(0) + handshake(0, how=2) + handshake(0, how=1)
    + handshake(0, how=2, src=205) + handshake(1, how=3, damage=(40, 1))
    + handshake(1, how=4) + handshake(2, ciphers=200) + handshake(2, ciphers=202)
    + handshake(3, sock=ALT),
    "refused_ctrl": bytes([0]) + handshake(0) + ctrl(0, LOOKUP, key=1)
    + b"".join(ctrl(0, k) for k in range(4, 11)) + ctrl(0, REGISTER) + ctrl(0, 0, cmode=5)
    + ctrl(0, 0, cmode=7) + ctrl(0, 0, damage=250) + ctrl(0, 0, damage=231)
    + ctrl(0, 0, raw=b"\x01\x00") + ctrl(0, 0, raw=bytes(120)) + ctrl(0, 0, raw=bytes(205)) + ctrl(0, LOOKUP, sock=ALT)
    + ctrl(0, REGISTER, src=205) + relay(0, 0, 64, token=240),
    "old_keys": bytes([0]) + handshake(0) + (ctrl(0, REGISTER) + wait(5, times=4)) * 10,
    "many_asks": bytes([0]) + joined(0, 1) + ctrl(0, LOOKUP, key=1) + wait(0, run_timers=True)
    + ctrl(0, LOOKUP, key=1) * 17 + ctrl(1, ANSWER, flags=1, answer_last=True, wrong_key=2)
    + wait(4),
    "raw": bytes([0]) + raw(0, b"") + raw(1, bytes(133)) + raw(2, bytes(40)) + raw(3, bytes(30))
    + raw(4, bytes(77)) + raw(5, bytes(60), sock=ALT) + raw(3, bytes(10)),
    # obf_psk (config bit 32): the same programs obfuscated, and probes left plain.
    "obf_introduce_and_relay": bytes([32]) + introduced + relay(0, 1, 1400, repeats=8)
    + relay(1, 0, 200) + relay(0, 1, 100, src=205) + ctrl(2, WHOAMI, sock=ALT) + ctrl(0, WHOAMI),
    "obf_raw": bytes([32]) + handshake(0) + raw(0, b"", probe=1) + raw(1, bytes(133), probe=1)
    + raw(1, bytes(133), probe=0) + raw(2, bytes(40), probe=1) + raw(3, bytes(30), probe=0)
    + raw(4, bytes(77), probe=1) + raw(5, bytes(60), sock=ALT, probe=1),
}

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "rendezvous")
os.makedirs(here, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
