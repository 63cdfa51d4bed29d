"""One-click unsubscribe tokens: U1 (how a token is written) and U2 (strict verification)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from notify_core.mail import (
    MIN_SECRET_BYTES,
    Unsubscribe,
    token_payload,
    unsubscribe_token,
    verify_unsubscribe_token,
)
from notify_core.values.errors import InvalidUnsubscribe, UsageError
from tests.strategies_mail import KNOWN, SECRET, category_sets, people

ZERO = bytes(32)
# The spec's example (spec/examples/inbox-table-examples.jsonl, case token-ana).
ANA = (
    "eyJjIjpbIm1lbnRpb24iLCJ3YXRjaGVkX3BhZ2UiXSwidSI6ImFuYSIsInYiOjF9"
    ".PWWsq96NUtK8JkjvG20cmDeeCHjnha4CD3fmaQVCMdQ"
)
B64URL = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def signed(payload: bytes, secret: bytes = SECRET) -> str:
    """A token over any payload bytes with a valid MAC (what only the secret's holder makes)."""
    return b64(payload) + "." + b64(hmac.new(secret, payload, hashlib.sha256).digest())


def verify(token: str, secret: bytes = SECRET) -> Unsubscribe | None:
    return verify_unsubscribe_token(secret, token, known_categories=KNOWN)


class TestWrite:
    def test_u1_the_spec_example(self) -> None:
        assert unsubscribe_token(ZERO, "ana", ["watched_page", "mention"]) == ANA

    def test_u1_payload_sorted_keys_no_spaces_sorted_categories_version_1(self) -> None:
        assert token_payload("ana", ["watched_page", "mention", "watched_page"]) == (
            b'{"c":["mention","watched_page"],"u":"ana","v":1}'
        )

    def test_u1_non_ascii_is_written_unescaped_utf8(self) -> None:
        payload = token_payload("jürgen", ["mention"])
        assert payload == '{"c":["mention"],"u":"jürgen","v":1}'.encode()
        token = unsubscribe_token(SECRET, "jürgen", ["mention"])
        assert base64.urlsafe_b64decode(token.split(".")[0] + "==") == payload

    def test_u1_no_padding_and_the_mac_covers_the_payload_bytes(self) -> None:
        token = unsubscribe_token(SECRET, "a", ["mention"])
        head, tail = token.split(".")
        assert "=" not in token
        mac = hmac.new(SECRET, token_payload("a", ["mention"]), hashlib.sha256).digest()
        assert tail == b64(mac)
        assert head == b64(token_payload("a", ["mention"]))

    def test_u1_at_least_one_category(self) -> None:
        with pytest.raises(InvalidUnsubscribe) as info:
            unsubscribe_token(SECRET, "ana", [])
        assert info.value.as_json() == {"code": "no_categories", "pointer": "/categories"}

    def test_u1_the_secret_has_32_bytes(self) -> None:
        assert MIN_SECRET_BYTES == 32
        with pytest.raises(InvalidUnsubscribe) as info:
            unsubscribe_token(bytes(31), "ana", ["mention"])
        assert info.value.code == "weak_secret"
        with pytest.raises(InvalidUnsubscribe):
            verify_unsubscribe_token(b"", ANA, known_categories=KNOWN)
        with pytest.raises(UsageError):
            unsubscribe_token("0" * 64, "ana", ["mention"])  # type: ignore[arg-type]

    def test_u1_text_that_is_not_utf8_or_not_a_string(self) -> None:
        with pytest.raises(InvalidUnsubscribe) as info:
            unsubscribe_token(SECRET, "\ud800", ["mention"])
        assert info.value.code == "invalid_person"
        with pytest.raises(InvalidUnsubscribe) as info:
            unsubscribe_token(SECRET, "ana", ["\udfff"])
        assert info.value.code == "invalid_category"
        with pytest.raises(UsageError):
            unsubscribe_token(SECRET, "ana", "mention")
        with pytest.raises(UsageError):
            unsubscribe_token(SECRET, "ana", [1])  # type: ignore[list-item]
        with pytest.raises(UsageError):
            unsubscribe_token(SECRET, 7, ["mention"])  # type: ignore[arg-type]


class TestVerify:
    def test_u2_the_spec_example(self) -> None:
        found = verify_unsubscribe_token(ZERO, ANA, known_categories=KNOWN)
        assert found == Unsubscribe(person="ana", categories=("mention", "watched_page"))

    def test_u2_another_secret_is_invalid(self) -> None:
        assert verify(ANA, SECRET) is None

    def test_u2_categories_must_be_known(self) -> None:
        token = unsubscribe_token(SECRET, "ana", ["mention", "storage_sync_failed"])
        assert verify(token) is None
        found = verify_unsubscribe_token(
            SECRET, token, known_categories=KNOWN | {"storage_sync_failed"}
        )
        assert found is not None

    @pytest.mark.parametrize(
        "token",
        [
            "",
            ".",
            ANA + "=",
            ANA.replace(".", ".="),
            ANA.replace(".", "=."),
            ANA + ".x",
            " " + ANA,
            ANA + "\n",
            ANA[:5] + "+" + ANA[6:],
            ANA[:-1] + "/",
            ANA[:10] + " " + ANA[10:],
            ANA.split(".")[0],
            ANA.replace(".", ""),
            ANA.upper(),
            "\u0660" + ANA[1:],
        ],
    )
    def test_u2_strict_decoding(self, token: str) -> None:
        assert verify_unsubscribe_token(ZERO, token, known_categories=KNOWN) is None

    def test_u2_non_canonical_trailing_bits(self) -> None:
        # The MAC is 32 bytes: 43 characters whose last carries 2 unused bits, which must be 0.
        head, tail = ANA.split(".")
        last = B64URL.index(tail[-1])
        for bits in range(1, 4):
            twisted = tail[:-1] + B64URL[last ^ bits]
            assert base64.urlsafe_b64decode(twisted + "=") == base64.urlsafe_b64decode(tail + "=")
            assert (
                verify_unsubscribe_token(ZERO, f"{head}.{twisted}", known_categories=KNOWN) is None
            )

    @pytest.mark.parametrize(
        "payload",
        [
            b'{"c": ["mention"], "u": "ana", "v": 1}',
            b'{"u":"ana","c":["mention"],"v":1}',
            b'{"c":["watched_page","mention"],"u":"ana","v":1}',
            b'{"c":["mention","mention"],"u":"ana","v":1}',
            b'{"c":["mention"],"u":"ana","v":1.0}',
            b'{"c":["mention"],"u":"ana","v":true}',
            b'{"c":["mention"],"u":"ana","v":"1"}',
            b'{"c":["mention"],"u":"ana","v":2}',
            b'{"c":["mention"],"u":"ana"}',
            b'{"c":["mention"],"u":"ana","v":1,"x":0}',
            b'{"c":["mention"],"u":"ana","v":1,"v":1}',
            b'{"c":[],"u":"ana","v":1}',
            b'{"c":"mention","u":"ana","v":1}',
            b'{"c":["mention"],"u":7,"v":1}',
            b'{"c":["nope"],"u":"ana","v":1}',
            b'{"c":["mention"],"u":"j\\u00fcrgen","v":1}',
            b'{"c":["mention"],"u":"\\ud800","v":1}',
            b'{"c":["mention"],"u":"ana","v":1}\n',
            b' {"c":["mention"],"u":"ana","v":1}',
            b'["mention","ana",1]',
            b"\xff",
            b"",
            b"[" * 100_000,
            b'{"c":["mention"],"u":"ana","v":1' + b"0" * 5000 + b"}",
        ],
    )
    def test_u2_non_canonical_payload_with_a_valid_mac_is_invalid(self, payload: bytes) -> None:
        assert verify(signed(payload)) is None

    def test_u2_a_valid_mac_over_the_canonical_payload_is_valid(self) -> None:
        # The control for the cases above: the signing helper makes valid tokens.
        payload = '{"c":["mention"],"u":"jürgen","v":1}'.encode()
        assert verify(signed(payload)) == Unsubscribe(person="jürgen", categories=("mention",))

    def test_u2_a_token_that_is_not_a_string_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError):
            verify_unsubscribe_token(ZERO, ANA.encode(), known_categories=KNOWN)  # type: ignore[arg-type]


@given(people, category_sets)
def test_u1_u2_round_trip(person: str, categories: list[str]) -> None:
    token = unsubscribe_token(SECRET, person, categories)
    assert verify(token) == Unsubscribe(person=person, categories=tuple(sorted(set(categories))))


@given(people, category_sets, st.integers(min_value=0, max_value=2**53))
def test_u1_u3_a_generation_rides_in_g_and_round_trips(
    person: str, categories: list[str], generation: int
) -> None:
    """U1/U3: a person created again after being forgotten n times signs with ``g`` = n
    (none for 0, so tokens of people never forgotten stay as they were)."""
    token = unsubscribe_token(SECRET, person, categories, generation)
    payload = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert payload.get("g") == (generation or None)
    found = verify(token)
    assert found == Unsubscribe(
        person=person, categories=tuple(sorted(set(categories))), generation=generation
    )
    if generation:
        assert token != unsubscribe_token(SECRET, person, categories)


def test_u1_a_generation_is_an_integer_from_zero() -> None:
    with pytest.raises(InvalidUnsubscribe) as info:
        unsubscribe_token(ZERO, "ana", ["mention"], -1)
    assert (info.value.code, info.value.pointer) == ("invalid_generation", "/generation")
    for bad in (True, 1.0, "1"):
        with pytest.raises(UsageError):
            unsubscribe_token(ZERO, "ana", ["mention"], bad)  # type: ignore[arg-type]


@given(people, category_sets, st.data())
def test_u2_any_single_byte_change_is_invalid(
    person: str, categories: list[str], data: st.DataObject
) -> None:
    token = unsubscribe_token(SECRET, person, categories)
    index = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    replacement = data.draw(st.sampled_from(B64URL + ".=+/ \n\x00é") | st.characters())
    assume(replacement != token[index])
    assert verify(token[:index] + replacement + token[index + 1 :]) is None


@given(st.text())
def test_u2_arbitrary_strings_never_raise(text: str) -> None:
    assert verify(text) is None


@given(
    st.lists(st.sampled_from(B64URL), max_size=90).map("".join),
    st.lists(st.sampled_from(B64URL), max_size=50).map("".join),
)
def test_u2_arbitrary_base64url_pairs_never_raise(head: str, tail: str) -> None:
    assert verify(f"{head}.{tail}") is None


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "c": st.lists(st.sampled_from(sorted(KNOWN)) | st.text(max_size=5), max_size=4)
            | _json_values,
            "u": people | _json_values,
            "v": st.sampled_from([1, 1.0, True, 2, 0, "1"]) | _json_values,
            "g": st.sampled_from([1, 2, 0, -1, 1.0, True, "1"]) | st.integers() | _json_values,
            "x": _json_values,
        },
    ),
    st.booleans(),
    st.booleans(),
    st.sampled_from([(",", ":"), (", ", ": "), (",", ": ")]),
)
def test_u2_signed_payloads_are_valid_exactly_when_canonical(
    obj: dict[str, object], sort_keys: bool, ensure_ascii: bool, separators: tuple[str, str]
) -> None:
    payload = json.dumps(
        obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=separators
    ).encode("utf-8", "surrogatepass")
    found = verify(signed(payload))
    generation = obj.get("g", 0)
    canonical = (
        set(obj) in ({"c", "u", "v"}, {"c", "g", "u", "v"})
        and (("g" not in obj) or (type(generation) is int and generation >= 1))
        and type(obj["v"]) is int
        and obj["v"] == 1
        and isinstance(obj["u"], str)
        and isinstance(obj["c"], list)
        and bool(obj["c"])
        and all(isinstance(c, str) and c in KNOWN for c in obj["c"])
        and obj["c"] == sorted(set(obj["c"]))
        and payload == token_payload(obj["u"], obj["c"], generation)  # type: ignore[arg-type]
    )
    if canonical:
        assert found == Unsubscribe(
            person=obj["u"],
            categories=tuple(obj["c"]),
            generation=generation,  # type: ignore[arg-type]
        )
    else:
        assert found is None


@pytest.mark.parametrize(
    ("make", "kind", "code", "message", "pointer"),
    [
        (
            lambda: unsubscribe_token("0" * 64, "ana", ["mention"]),
            UsageError,
            "invalid_type",
            "the unsubscribe secret must be bytes",
            None,
        ),
        (
            lambda: unsubscribe_token(bytes(31), "ana", ["mention"]),
            InvalidUnsubscribe,
            "weak_secret",
            "the unsubscribe secret has 31 bytes, at least 32 needed",
            None,
        ),
        (
            lambda: unsubscribe_token(SECRET, 7, ["mention"]),
            UsageError,
            "invalid_type",
            "person must be a string",
            "/person",
        ),
        (
            lambda: unsubscribe_token(SECRET, "ana", "mention"),
            UsageError,
            "invalid_type",
            "categories must be a collection of strings",
            "/categories",
        ),
        (
            lambda: unsubscribe_token(SECRET, "ana", ["mention", 1]),
            UsageError,
            "invalid_type",
            "a category must be a string",
            "/categories/1",
        ),
        (
            lambda: unsubscribe_token(SECRET, "ana", ["mention", "\udfff"]),
            InvalidUnsubscribe,
            "invalid_category",
            "not encodable as UTF-8: '\\udfff'",
            "/categories/1",
        ),
        (
            lambda: unsubscribe_token(SECRET, "\ud800", ["mention"]),
            InvalidUnsubscribe,
            "invalid_person",
            "not encodable as UTF-8: '\\ud800'",
            "/person",
        ),
        (
            lambda: unsubscribe_token(SECRET, "ana", []),
            InvalidUnsubscribe,
            "no_categories",
            "an unsubscribe token names at least one category",
            "/categories",
        ),
        (
            lambda: verify_unsubscribe_token(SECRET, b"x.y", known_categories=KNOWN),
            UsageError,
            "invalid_type",
            "a token must be a string",
            "/token",
        ),
    ],
)
def test_u1_u2_errors_carry_code_message_and_pointer(
    make: object, kind: type[Exception], code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(kind) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)  # type: ignore[attr-defined]
