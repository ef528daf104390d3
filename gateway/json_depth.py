"""How deeply decoded JSON nests, measured without recursion and without Python work per item.

orjson refuses to encode more than 254 levels of objects and arrays, pydantic's serializer not
much more, and recursive Python stops near 1,000: a value that enters the gateway (a client's
request, an upstream's tool-call arguments) must nest well within that to be stored and
rendered. :func:`nesting_exceeds` is the one measure both the edges' request bounds
(:mod:`gateway.edges._bounds`) and the truncation guard (:mod:`gateway.guards.truncation`) use.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import chain
from typing import Any

# C callables, so that map/filter over them run no bytecode per item.
is_dict: Callable[[Any], bool] = partial(type.__instancecheck__, dict)
is_list: Callable[[Any], bool] = partial(type.__instancecheck__, list)
_values: Callable[[Any], Any] = dict.values


def nesting_exceeds(value: Any, limit: int) -> bool:
    """True when decoded JSON ``value`` nests more than ``limit`` levels of objects and arrays
    (``value`` itself, when it is one, is level 1).

    Breadth first, one level at a time: each level's containers are gathered by C iterators, so
    the Python cost is a few dozen bytecodes per level whatever the width."""
    dicts = [value] if type(value) is dict else []
    lists = [value] if type(value) is list else []
    depth = 0
    while dicts or lists:
        depth += 1
        if depth > limit:
            return True
        level = list(chain(chain.from_iterable(map(_values, dicts)), chain.from_iterable(lists)))
        dicts = list(filter(is_dict, level))
        lists = list(filter(is_list, level))
    return False


def may_exceed(text: str, limit: int) -> bool:
    """False when JSON ``text`` certainly nests at most ``limit`` levels: it has no more than
    ``limit`` opening brackets (a cheap test in C before :func:`nesting_exceeds`)."""
    return len(text) > 2 * limit and text.count("{") + text.count("[") > limit
