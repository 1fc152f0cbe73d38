"""LLDP as it is on the wire: frames (`frame`: the LLDPDU, TLV by TLV, encoded and decoded by
sparkfab itself) and the raw sockets that send and hear them (`wire`).

What a device announces is hostile input until checked: decoding never fails on bytes a
neighbour chose (a malformed LLDPDU is refused as a whole, with why), and every text a TLV
carries is kept as the bytes said it, for the readers to escape where they write it.
"""
