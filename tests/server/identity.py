"""A test identity provider: each token names a user (``c.TokenUsersIdentityProvider.users``)."""

from __future__ import annotations

from jupyter_server.auth import IdentityProvider, User
from traitlets import Dict


class TokenUsersIdentityProvider(IdentityProvider):
    """``Authorization: token <t>`` authenticates as ``users[t]``; anything else is anonymous-denied."""

    users = Dict(config=True, help="token -> user name")

    def get_user(self, handler):  # type: ignore[override]
        header = handler.request.headers.get("Authorization", "")
        token = header[len("token "):] if header.startswith("token ") else handler.get_argument("token", "")
        name = self.users.get(token)
        if name is None:
            return None
        handler._token_authenticated = True  # API clients with a token skip XSRF, as with Jupyter's own tokens
        return User(username=name)

    @property
    def token(self):  # no shared token: each user has their own
        return ""
