"""Network layers: captured packets -> ordered byte streams per TCP connection direction.

``packet`` decodes link, IP and TCP headers (``Packet`` -> ``TcpSegment``), reassembling IPv4
fragments; ``tcp`` turns segments into ``StreamData`` / ``StreamGap`` / ``StreamEnded`` events per
connection and direction, with the arrival time of every payload piece.
"""
