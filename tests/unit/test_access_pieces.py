"""Access tokens without a database: what a grant allows, the token's text, and the requests' rules."""

from __future__ import annotations

import base64
import hashlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from tests.unit.test_cli_pieces import column_widths, printed
from zapomni_cli.errors import describe_validation_error
from zapomni_cli.main import build_parser
from zapomni_cli.token_commands import CREATE_FLAGS
from zapomni_core import (
    ROLES,
    CreatedToken,
    CreateTokenRequest,
    Grant,
    RevokedToken,
    RevokeTokenRequest,
    Role,
    TokenInfo,
    TokenList,
)
from zapomni_core.access.tokens import digest, new_token, token_id

# -- Grant ---------------------------------------------------------------------------------------


def grant(role: Role = "write", workspaces: set[str] | None = None, expires_at: float | None = None) -> Grant:
    return Grant("0123456789ab", "ci", role, frozenset(workspaces) if workspaces is not None else None, expires_at)


def test_roles_are_ordered_and_each_includes_the_ones_before() -> None:
    assert ROLES == ("read", "write", "admin")
    for held in ROLES:
        for needed in ROLES:
            refusal = grant(held).refusal(needed, "default")
            if ROLES.index(held) >= ROLES.index(needed):
                assert refusal is None, (held, needed)
            else:
                assert refusal == f"token 'ci' has role {held}; this needs {needed}"


def test_a_token_of_some_workspaces_is_refused_the_others_naming_its_own() -> None:
    scoped = grant("admin", {"notes", "default"})
    assert scoped.refusal("write", "notes") is None and scoped.refusal("admin", "default") is None
    assert scoped.refusal("read", "team") == "token 'ci' may not use workspace 'team' (its workspaces: default, notes)"
    assert scoped.sees("notes") and not scoped.sees("team")
    # the role is named first when both are missing
    assert grant("read", {"notes"}).refusal("write", "team") == "token 'ci' has role read; this needs write"


def test_a_token_for_every_workspace_sees_any_even_one_made_later() -> None:
    every = grant("read")
    assert every.sees("made-tomorrow") and every.refusal("read", "made-tomorrow") is None
    assert every.refusal("write", "made-tomorrow") == "token 'ci' has role read; this needs write"


def test_store_wide_calls_take_the_role_and_admin_ones_every_workspace() -> None:
    # A call on no single workspace (list_workspaces, a job by id): the role decides.
    assert grant("read", {"notes"}).refusal("read", None) is None
    assert grant("read", {"notes"}).refusal("write", None) == "token 'ci' has role read; this needs write"
    # Tokens and operator actions: an admin of some workspaces could otherwise make itself one of every workspace.
    assert grant("admin", {"notes"}).refusal("admin", None) == (
        "token 'ci' is limited to workspaces notes; this acts on the whole store and needs an admin token for "
        "all workspaces"
    )
    assert grant("admin").refusal("admin", None) is None


def test_a_grant_past_its_expiry_is_refused_everything() -> None:
    expired = grant("admin", expires_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp())
    assert expired.refusal("read", "default") == "token 'ci' expired at 2026-01-02 03:04:05 UTC"
    assert grant("admin", expires_at=time.time() + 60).refusal("admin", None) is None


# -- the token's text ----------------------------------------------------------------------------


def test_a_token_is_recognisable_carries_its_id_and_256_random_bits() -> None:
    made = [new_token() for _ in range(50)]
    for made_id, token in made:
        prefix, embedded, secret = token.split("_", 2)
        assert prefix == "zap" and embedded == made_id and token_id(token) == made_id
        assert len(base64.urlsafe_b64decode(secret + "=")) == 32
    assert len({token for _id, token in made}) == len({made_id for made_id, _token in made}) == 50


@pytest.mark.parametrize(
    "text",
    [
        "",
        "zap_",
        "Bearer zap_0123456789ab_" + "a" * 43,
        "zap_0123456789ab_" + "a" * 42,
        "zap_0123456789ab_" + "a" * 44,
        "zap_0123456789AB_" + "a" * 43,
        "zap_0123456789ab_" + "a" * 42 + "!",
        "zap_0123456789ab_" + "a" * 43 + "\n",
        "pat_0123456789ab_" + "a" * 43,
        "zap_0123456789ab_" + "a" * 42 + "é",
    ],
)
def test_anything_but_a_well_formed_token_has_no_id(text: str) -> None:
    assert token_id(text) is None


def test_what_is_stored_is_the_sha256_of_the_token_never_its_text() -> None:
    _id, token = new_token()
    stored = digest(token)
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert token.split("_", 2)[2] not in stored and stored != digest(new_token()[1])


# -- requests ------------------------------------------------------------------------------------


def create(**fields: Any) -> CreateTokenRequest:
    return CreateTokenRequest.model_validate({"name": "ci", "role": "read", **fields})


def create_errors(**fields: Any) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        create(**fields)
    return {".".join(map(str, e["loc"])): e["msg"].removeprefix("Value error, ") for e in caught.value.errors()}


def test_a_token_needs_workspaces_or_all_and_not_both() -> None:
    assert create_errors() == {
        "workspaces": "name at least one workspace, or set all_workspaces to grant every workspace"
    }
    assert create_errors(workspaces=["notes"], all_workspaces=True) == {
        "workspaces": "not with all_workspaces, which already grants every workspace"
    }
    assert create(workspaces=["notes", "default", "notes"]).scope == ("default", "notes")
    assert create(all_workspaces=True).scope is None


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": "-ci"}, "name", "String should match pattern"),
        ({"name": "a" * 65}, "name", "String should match pattern"),
        ({"name": "my token"}, "name", "String should match pattern"),
        ({"role": "root"}, "role", "Input should be 'read', 'write' or 'admin'"),
        ({"role": None}, "role", "Input should be 'read', 'write' or 'admin'"),
        ({"workspaces": ["Team"]}, "workspaces.0", "String should match pattern"),
        ({"workspaces": ["w"] * 101}, "workspaces", "List should have at most 100 items"),
        ({"all_workspaces": "yes"}, "all_workspaces", "Input should be a valid boolean"),
        ({"expires": "soon"}, "expires", "must be a duration such as 30d, 12h, 45m or 2w"),
        ({"expires": "30 days"}, "expires", "must be a duration such as 30d"),
        ({"expires": "2020-01-01"}, "expires", "must be in the future (got '2020-01-01', which has passed)"),
        ({"expires": "0h"}, "expires", "must be in the future"),
        ({"expires": "999999w"}, "expires", "must be before the year 10000"),
        ({"scopes": ["x"]}, "scopes", "Extra inputs are not permitted"),
    ],
)
def test_each_bad_field_is_named_with_its_rule(fields: dict[str, Any], field: str, message: str) -> None:
    errors = create_errors(**{"all_workspaces": True, **fields} if "workspaces" not in fields else fields)
    assert errors[field].startswith(message), errors
    assert set(errors) <= {field, "workspaces"}, errors  # a refused all_workspaces leaves workspaces alone


def test_an_expiry_is_a_duration_or_a_date_made_an_absolute_time_ahead() -> None:
    before = datetime.now(UTC)
    for given, expected in [("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), ("45m", timedelta(minutes=45)),
                            ("2w", timedelta(weeks=2))]:  # fmt: skip
        request = create(all_workspaces=True, expires=given)
        assert request.expires is not None and request.expires_at is not None
        at = datetime.fromisoformat(request.expires)
        assert before + expected - timedelta(seconds=1) <= at <= datetime.now(UTC) + expected, given
        assert request.expires_at == at.timestamp()
    dated = create(all_workspaces=True, expires="2999-01-01")
    assert dated.expires == "2999-01-01T00:00:00+00:00"
    assert create(all_workspaces=True, expires="2999-01-01T12:00:00+02:00").expires == "2999-01-01T10:00:00+00:00"
    assert create(all_workspaces=True).expires_at is None


def test_a_revocation_names_a_token_by_name_or_id_or_by_the_token_itself() -> None:
    assert RevokeTokenRequest(name_or_id="ci").name_or_id == "ci"
    made_id, token = new_token()
    assert RevokeTokenRequest(name_or_id=made_id).name_or_id == made_id
    # the token itself is reduced to its id at once: the secret goes no further
    assert RevokeTokenRequest(name_or_id=token).name_or_id == made_id
    with pytest.raises(ValidationError) as caught:
        RevokeTokenRequest(name_or_id="my token")
    assert "must be a token's name (1-64 letters" in str(caught.value)


# -- the command line ----------------------------------------------------------------------------

FLAGS = {
    "name": "--name",
    "role": "--role",
    "workspaces": "--workspace",
    "all_workspaces": "--all",
    "expires": "--expires",
}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "--workspace: name at least one workspace, or set --all to grant every workspace"),
        ({"workspaces": ["a"], "all_workspaces": True}, "--workspace: not with --all, which already grants every"),
        ({"name": "-x", "all_workspaces": True}, "--name: must be 1-64 letters, digits, '.', '-' or '_'"),
        ({"role": "root", "all_workspaces": True}, "--role: input should be 'read', 'write' or 'admin'"),
        ({"workspaces": ["My Notes"]}, "--workspace: must be 1-63 lowercase letters"),
        ({"expires": "2020-01-01", "all_workspaces": True}, "--expires: must be in the future"),
    ],
)
def test_token_create_errors_name_the_flag(fields: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError) as caught:
        create(**fields)
    lines = describe_validation_error(caught.value, CREATE_FLAGS)
    assert len(lines) == 1 and lines[0].startswith(expected), lines


def test_a_missing_flag_is_named_as_required() -> None:
    with pytest.raises(ValidationError) as caught:
        CreateTokenRequest.model_validate({"all_workspaces": True})
    assert describe_validation_error(caught.value, CREATE_FLAGS) == ["--name: required", "--role: required"]


def test_the_token_commands_parse() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["token", "create", "--name", "ci", "--workspace", "a", "--workspace", "b", "--role", "read"]
    )
    assert (args.memory_command.name, args.command_path, args.workspaces) == ("create", "token create", ["a", "b"])
    assert parser.parse_args(["token", "list", "--json"]).json is True
    assert parser.parse_args(["token", "revoke", "ci"]).name_or_id == "ci"


INFO = TokenInfo(
    token_id="0123456789ab", name="laptop", role="write", workspaces=["default", "notes", "team-falcon"],
    state="active", created_at="2026-11-26T19:00:00+00:00", expires_at="2027-01-01T00:00:00+00:00",
    revoked_at=None, last_used_at="2026-11-26T20:00:00+00:00",
)  # fmt: skip


def test_the_token_table_fits_80_columns_with_whole_ids_and_names() -> None:
    every = INFO.model_copy(update={"token_id": "ba9876543210", "name": "ci", "workspaces": None, "state": "revoked",
                                    "expires_at": None, "last_used_at": None})  # fmt: skip
    lines = printed(TokenList(tokens=[INFO, every]))
    assert all(len(line) <= 80 for line in lines), lines
    widths = column_widths(lines, ["id", "name", "role", "workspaces", "state", "expires", "last used"])
    assert min(widths) >= 6, widths
    first = lines[2].split()
    assert first[:4] == ["0123456789ab", "laptop", "write", "default,"] and first[-3:] == [
        "active",
        "2027-01-01",
        "2026-11-26",
    ]
    assert lines[3].split() == ["team-falcon"]  # the workspaces wrap, whole
    assert lines[4].split() == ["ba9876543210", "ci", "write", "all", "revoked", "never", "never"]
    assert printed(TokenList(tokens=[]))[0].startswith("No tokens yet")


def test_a_created_token_is_printed_whole_on_a_line_of_its_own_with_the_warning() -> None:
    _id, token = new_token()
    lines = printed(CreatedToken(token=token, info=INFO))
    assert lines[0] == (
        "Created token 'laptop' (id 0123456789ab): role write, workspaces default, notes, team-falcon; "
        "expires 2027-01-01 00:00 UTC."
    )
    assert token in lines
    assert any("cannot be shown again" in line for line in lines)
    revoked = printed(RevokedToken(info=INFO, already_revoked=False))
    assert revoked[0].startswith("Revoked token 'laptop' (id 0123456789ab): it stops working at once")
