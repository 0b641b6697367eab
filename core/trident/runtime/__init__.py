"""What runs a compiled Trident topology in the workers.

======================  =========================  =========================================
part                    module                     where to start reading
======================  =========================  =========================================
master coordinator      :mod:`.coordinator`        ``TridentCoordinator.next_tuple``
one bolt of the plan    :mod:`.bolt`               ``TridentBolt.process``: pieces, commits
a batch in a bolt       :mod:`.bolt`               ``_Batch``: attempt, pieces, completeness
operations on rows      :mod:`.evaluate`           ``Evaluator.run``: one call per node
batch sources           :mod:`.sources`            ``SpoutSource``, ``DRPCSource``
spouts' metadata        :mod:`.meta`               ``MetaStore``: JSON in the state store
failed batches' lines   :mod:`.repeats`            ``RepeatedWarning.warning``
======================  =========================  =========================================
"""
from __future__ import annotations
