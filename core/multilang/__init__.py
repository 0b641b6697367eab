"""Multi-lang: components whose code runs in a subprocess speaking Storm's multi-lang protocol
(pystorm and streamparse components, storm.py, Node, Ruby, ...), API.md section 13.

==========================  =====================  =============================================
part                        module                 where to start reading
==========================  =====================  =============================================
framing, handshake context  :mod:`.protocol`       ``JsonCodec``, ``MsgpackCodec``,
                                                   ``handshake_context``
one subprocess, restarts    :mod:`.process`        ``ShellProcess`` (reader, writer, stderr
                                                   threads), ``ShellHost.ensure``
what bolts and spouts share :mod:`.link`           ``ShellLink.common``, ``answer_emit``
the bolt                    :mod:`.bolt`           ``ShellBolt.process_batch``, ``_on_messages``
the spout                   :mod:`.spout`          ``ShellSpout._call``
worker shutdown             :mod:`.hooks`          ``squall_worker_stopping``
==========================  =====================  =============================================
"""
from __future__ import annotations

from squall.multilang.bolt import ShellBolt
from squall.multilang.link import ShellMetric
from squall.multilang.spout import ShellSpout

__all__ = ["ShellBolt", "ShellMetric", "ShellSpout"]
