"""``squall ui``: web pages, Storm's UI REST API and a Prometheus endpoint over the cluster.

=====================================  ==================  =====================================
part                                   module              where to start reading
=====================================  ==================  =====================================
the daemon (uvicorn, the sampler)      :mod:`.server`      ``UiServer.start``
routes, errors, origin check           :mod:`.app`         ``make_app``
who asks, what they may see            :mod:`.access`      ``Access.user``, ``User.sees``
what nimbus answers, per user          :mod:`.cluster_view`  ``ClusterView.topology``
Storm's JSON shapes                    :mod:`.views`       ``topology_page``
the charts' history                    :mod:`.history`     ``History.series``
``/metrics``                           :mod:`.prometheus`  ``render``
the page                               ``static/``         ``index.html``, ``app.js``
=====================================  ==================  =====================================

Needs the ``cluster`` extra (starlette, uvicorn); ``import squall`` does not import this.
"""
from __future__ import annotations

from squall.ui.server import UiServer

__all__ = ["UiServer"]
