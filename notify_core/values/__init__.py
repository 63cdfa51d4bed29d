"""The values every wing shares: instants, kinds, links, time zones, errors.

Lives here: the documented errors (`errors`), instants and their text (`instants`), the
message kinds (`kinds`), links and their templates (`links`), IANA zones from tzdata
(`zones`), JSON member checks (`json_members`) and opaque identifiers (`opaque`).

May import: nothing of notify_core outside this wing (it is the ground floor).
"""
