"""Sources: files and standard input -> packets (pcap, pcapng) or ready exchanges (HAR, VCR).

Only this package touches files. The format is decided from content (magic numbers and
document shape), never from a file name.
"""
