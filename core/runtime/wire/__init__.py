"""Tuples between workers: the wire format (:mod:`.codec`), the sending side
(:mod:`.outbox`) and the receiving side (:mod:`.inbox`).

A worker hands its transport one batch per destination worker: a list of messages
``(task_id, payload)``, one per destination task, as Storm's TaskMessage. The payload of a
task's message is the serialized list of that task's entries (see :mod:`.codec`); task id 0
carries a control message between workers (backpressure, load reports). The receiver
dispatches by task id first: a message for a task it does not run is forwarded undecoded.
"""
