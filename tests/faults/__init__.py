"""The fault-injection suite: packet captures rewritten with the faults capture tools produce.

``pcapfile`` reads pcap and pcapng and writes pcap with its own ``struct`` code (so the
instrument does not share agentshark's readers), ``inject`` applies one seeded fault and
records which packets it touched, ``harness`` runs agentshark on the clean and the faulted
capture and classifies every exchange and call, ``report`` prints the figures of the note
(``python -m tests.faults.report``).
"""
