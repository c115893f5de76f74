"""The recording gateway (``agentshark proxy``): a live source of ready exchanges.

Built on mitmproxy (the optional ``proxy`` extra), which speaks HTTP/1, HTTP/2, WebSocket
and TLS interception: :mod:`~agentshark.proxy.gateway` runs its embedded master,
:mod:`~agentshark.proxy.addon` turns each flow into an :class:`~agentshark.model.Exchange`
with the arrival times of its request, response head and every body chunk (the same shape
the pcap and HAR sources give), :mod:`~agentshark.proxy.routes` says where a reverse-proxied
request goes. The exchanges then run through the same call stage as files
(:mod:`agentshark.pipeline.live_exchanges`) into the live views, and into a HAR file
(:mod:`agentshark.output.har_write`).
"""
