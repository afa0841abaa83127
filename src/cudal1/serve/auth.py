"""The token check every request passes before a route sees it (or reads its body).

Plain ASGI middleware around the whole application, so the OpenEnv routes mounted under
`/openenv` (HTTP and WebSocket) are guarded exactly like `/v1/evaluate`.
"""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = frozenset({"/v1/health", "/openenv/health"})
"""Liveness probes answer without a token; they reveal only load figures."""


class BearerAuth:
    """401 (or a refused WebSocket handshake) unless `Authorization: Bearer TOKEN` matches.
    The comparison takes the same time wherever the first differing byte is
    (`hmac.compare_digest`), so response times do not reveal the token byte by byte."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, token = given.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.token):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":  # closing before accept refuses the handshake (403)
            await send({"type": "websocket.close", "code": 1008})
            return
        why = "missing" if not given else "wrong"
        refusal = JSONResponse(
            {"detail": f"{why} token: send 'Authorization: Bearer TOKEN' with the server's token"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await refusal(scope, receive, send)
