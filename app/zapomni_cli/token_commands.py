"""`zapomni token create | list | revoke`: the access tokens the HTTP server asks for (docs/decisions/0018).

A token is printed once, by `create`; the store keeps only its hash, so it cannot be shown again.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from zapomni_cli.commands import Command, Prepared, add_command, given
from zapomni_cli.errors import validate
from zapomni_core import EXPIRY_RULE, CreateTokenRequest, RevokeTokenRequest, ZapomniCore

# Request field -> what the person typed.
CREATE_FLAGS = {
    "name": "--name",
    "role": "--role",
    "workspaces": "--workspace",
    "all_workspaces": "--all",
    "expires": "--expires",
}
REVOKE_FLAGS = {"name_or_id": "NAME_OR_ID"}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "token",
        help="create, list and revoke the access tokens of the HTTP server",
        description="Access tokens for `zapomni serve --http`: each has a role (read < write < admin) and the "
        "workspaces it may use. Only a token's hash is stored; create prints the token once.",
        parents=[common],
    )
    actions = parser.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    for command in COMMANDS:
        add_command(actions, common, command)
        actions.choices[command.name].set_defaults(command_path=f"token {command.name}")


# -- create --------------------------------------------------------------------------------------


def _create_configure(parser: argparse.ArgumentParser) -> None:
    # No argparse `required` or `choices`: the request refuses what is missing or wrong, in one line naming the flag.
    parser.add_argument("--name", help="a name to tell it by, unique among the tokens that still work")
    parser.add_argument("--role", metavar="ROLE", help="read, write or admin (each can do what the ones before can)")
    parser.add_argument(
        "--workspace", action="append", dest="workspaces", metavar="NAME", help="a workspace it may use (repeatable)"
    )
    parser.add_argument(
        "--all", action="store_true", dest="all_workspaces", help="every workspace, including those made later"
    )
    parser.add_argument("--expires", metavar="WHEN", help=f"when it stops working: {EXPIRY_RULE} (default: never)")
    parser.epilog = "The token is printed once: copy it then, it cannot be shown again."


def _create_prepare(args: argparse.Namespace) -> Prepared:
    values = given(name=args.name, role=args.role, workspaces=args.workspaces, expires=args.expires)
    request = validate(CreateTokenRequest, {**values, "all_workspaces": args.all_workspaces}, CREATE_FLAGS)
    return Prepared(request, CREATE_FLAGS)


async def _create_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, CreateTokenRequest)
    return await core.access.create(prepared.request)


# -- list ----------------------------------------------------------------------------------------


def _list_prepare(args: argparse.Namespace) -> Prepared:
    return Prepared(None)


async def _list_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    return await core.access.list()


# -- revoke --------------------------------------------------------------------------------------


def _revoke_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name_or_id", metavar="NAME_OR_ID", help="the token's name or id (`zapomni token list`)")
    parser.epilog = "A revoked token stops working at once, for every server on this store."


def _revoke_prepare(args: argparse.Namespace) -> Prepared:
    return Prepared(validate(RevokeTokenRequest, {"name_or_id": args.name_or_id}, REVOKE_FLAGS), REVOKE_FLAGS)


async def _revoke_execute(core: ZapomniCore, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    assert isinstance(prepared.request, RevokeTokenRequest)
    return await core.access.revoke(prepared.request)


COMMANDS = (
    Command(
        "create",
        (),
        "create a token and print it, once",
        _create_configure,
        _create_prepare,
        _create_execute,
        scoped=False,
    ),
    Command(
        "list",
        (),
        "list the tokens with their state (never their secrets)",
        lambda _parser: None,
        _list_prepare,
        _list_execute,
        scoped=False,
    ),
    Command(
        "revoke",
        (),
        "revoke a token: it stops working at once",
        _revoke_configure,
        _revoke_prepare,
        _revoke_execute,
        scoped=False,
    ),
)
