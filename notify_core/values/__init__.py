"""The values every wing shares: instants, kinds, links, time zones, errors.

Lives here: the documented errors (`errors`), instants and their text (`instants`), the
message kinds (`kinds`), links and their templates (`links`), IANA zones from tzdata
(`zones`), JSON member checks (`json_members`), opaque identifiers (`opaque`) and what
notify reads from a preference record in effect (`record_rules`, M1-M5).

May import: nothing of notify_core outside this wing (it is the ground floor).
"""
