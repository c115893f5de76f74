"""Packet protection against RFC 9001 Appendix A and RFC 9000 §A.3."""

from __future__ import annotations

import pytest

from agentshark.quic.protection import (
    INITIAL_SUITE,
    PacketKeys,
    decode_packet_number,
    initial_secrets,
    next_secret,
)
from agentshark.quic.wire import VERSION_1, VERSION_2, WireError, parse_long_header, read_varint
from agentshark.tls.keyschedule import SUITES

DCID = bytes.fromhex("8394c8f03e515708")  # RFC 9001 §A.1


def test_initial_keys_rfc9001_a1() -> None:
    client, server = initial_secrets(DCID, VERSION_1)
    assert client.hex() == "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"
    assert server.hex() == "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b"
    keys = PacketKeys(client, INITIAL_SUITE, VERSION_1)
    assert keys.iv == int("fa044b2f42a3fd3b46fb255c", 16)
    assert keys.hp_key.hex() == "9f50449e04a0e810283a1e9933adedd2"
    server_keys = PacketKeys(server, INITIAL_SUITE, VERSION_1)
    assert server_keys.iv == int("0ac1493ca1905853b0bba03e", 16)
    assert server_keys.hp_key.hex() == "c206b8d9b9f0f37644430b490eeaa314"


def test_header_protection_masks_rfc9001_a2_a3() -> None:
    client, server = initial_secrets(DCID, VERSION_1)
    mask = PacketKeys(client, INITIAL_SUITE, VERSION_1).mask(
        bytes.fromhex("d1b1c98dd7689fb8ec11d242b123dc9b")
    )
    assert mask.hex() == "437b9aec36"
    mask = PacketKeys(server, INITIAL_SUITE, VERSION_1).mask(
        bytes.fromhex("2cd0991cd25b0aac406a5816b6394100")
    )
    assert mask.hex() == "2ec0d8356a"


def test_chacha20_short_header_rfc9001_a5() -> None:
    secret = bytes.fromhex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b")
    suite = SUITES[0x1303]
    keys = PacketKeys(secret, suite, VERSION_1)
    assert keys.iv == int("e0459b3474bdd0e44a41c144", 16)
    assert keys.hp_key.hex() == "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4"
    assert keys.mask(bytes.fromhex("5e5cd55c41f69080575d7999c25a5bfb")).hex() == "aefefe7d03"
    assert (
        next_secret(secret, suite, VERSION_1).hex()
        == "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9"
    )
    # the protected packet of §A.5: 4cfe4189655e5cd55c41f69080575d7999c25a5bfb
    packet = bytes.fromhex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb")
    mask = keys.mask(packet[5:21])
    first = packet[0] ^ (mask[0] & 0x1F)
    assert first == 0x42  # pn length 3
    truncated = int.from_bytes(packet[1:4], "big") ^ int.from_bytes(mask[1:4], "big")
    pn = decode_packet_number(654360563, truncated, 24)
    assert pn == 654360564
    header = bytes((first,)) + truncated.to_bytes(3, "big")
    assert keys.open(pn, header, packet[4:]) == bytes.fromhex("01")  # a PING frame


def test_version_2_changes_the_salt_and_labels() -> None:
    v1 = initial_secrets(DCID, VERSION_1)
    v2 = initial_secrets(DCID, VERSION_2)
    assert v1 != v2
    assert (
        PacketKeys(v2[0], INITIAL_SUITE, VERSION_2).hp_key
        != PacketKeys(v2[0], INITIAL_SUITE, VERSION_1).hp_key
    )


@pytest.mark.parametrize(
    ("largest", "truncated", "bits", "expected"),
    [
        (0xA82F30EA, 0x9B32, 16, 0xA82F9B32),  # RFC 9000 §A.3
        (-1, 0, 8, 0),
        (0xFF, 0x01, 8, 0x101),
        (0x100, 0xFF, 8, 0xFF),  # a late packet of the window before
    ],
)
def test_packet_number_recovery(largest: int, truncated: int, bits: int, expected: int) -> None:
    assert decode_packet_number(largest, truncated, bits) == expected


def test_varints_rfc9000_a1() -> None:
    assert read_varint(bytes.fromhex("c2197c5eff14e88c"), 0) == (151288809941952652, 8)
    assert read_varint(bytes.fromhex("9d7f3e7d"), 0) == (494878333, 4)
    assert read_varint(bytes.fromhex("7bbd"), 0) == (15293, 2)
    assert read_varint(bytes.fromhex("25"), 0) == (37, 1)
    with pytest.raises(WireError):
        read_varint(bytes.fromhex("7b"), 0)


def test_long_header_errors_are_wire_errors() -> None:
    with pytest.raises(WireError):
        parse_long_header(b"\xc0\x00\x00\x00\x01\x08abc", 0)
    with pytest.raises(WireError):  # Length past the datagram
        parse_long_header(b"\xc0\x00\x00\x00\x01\x00\x00\x00\x44\x00", 0)
