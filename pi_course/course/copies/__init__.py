"""Practice copies: made (:mod:`.practice`, from :mod:`.starters`), found (:mod:`.locate`), assembled.

A copy to grade is assembled by :mod:`.assemble`; :mod:`.checkpoint` and :mod:`.diffs` show the target.
"""
