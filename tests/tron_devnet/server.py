"""The devnet's HTTP server: a thread serving `api.ROUTES` over one `Devnet`, started by tests (on a free
port) or by `python -m tests.tron_devnet`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests import devnet_server
from tests.devnet_server import DevnetServer, JsonHandler
from tests.tron_devnet import api
from tests.tron_devnet.encoding import DecodeError
from tests.tron_devnet.node import Devnet

TRONGRID_TRC20 = ("v1", "accounts", "transactions", "trc20")


class Handler(JsonHandler[Devnet]):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self._answer(url.path, dict(parse_qsl(url.query)))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        body = self._body()
        try:
            fields = json.loads(body) if body.strip() else {}
        except ValueError:
            self._send(200, {"Error": "class com.alibaba.fastjson.JSONException : not a JSON body"})
            return
        if not isinstance(fields, dict):
            self._send(200, {"Error": "class com.alibaba.fastjson.JSONException : not a JSON object"})
            return
        self._answer(url.path, {**dict(parse_qsl(url.query)), **fields})

    def _answer(self, path: str, fields: dict[str, Any]) -> None:
        parts = path.strip("/").split("/")
        devnet = self.server.state
        if len(parts) == 5 and (parts[0], parts[1], parts[3], parts[4]) == TRONGRID_TRC20:
            self._call(lambda: api.trc20_history(devnet, parts[2], fields))
            return
        name = "/".join(parts)
        handler = api.ROUTES.get(name)
        if handler is None:
            self._send(404, {"Error": f"no such endpoint on the devnet: /{name}"})
            return
        visible = str(fields.get("visible", "false")).lower() == "true"
        fields["_solidity"] = name.startswith("walletsolidity/")
        self._call(lambda: _locked(devnet, handler, fields, visible), control=name.startswith("devnet/"))

    def _call(self, run: Any, *, control: bool = False) -> None:
        try:
            self._send(200, run())
        except api.BadRequest as exc:
            self._send(400, {"Error": str(exc)})
        except (DecodeError, ValueError, KeyError, TypeError) as exc:
            if control:
                self._send(400, {"Error": f"{type(exc).__name__}: {exc}"})
            else:
                self._send(
                    200, {"Error": f"class java.lang.IllegalArgumentException : {type(exc).__name__}: {exc}"}
                )


def _locked(devnet: Devnet, handler: api.Handler, fields: dict[str, Any], visible: bool) -> Any:
    # One request at a time sees and changes the chain: a read never meets half a block.
    with devnet.lock:
        return handler(devnet, fields, visible)


class Running(devnet_server.Running[Devnet]):
    """A TRON devnet serving on `url` from a thread, its `devnet` what the tests drive."""

    @property
    def devnet(self) -> Devnet:
        return self.server.state


def start(host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> Running:
    """A fresh devnet (genesis) on `port` (0: a free one), served from a daemon thread."""
    return Running.serve(DevnetServer(Devnet(), Handler, host, port, verbose=verbose), name="tron-devnet")
