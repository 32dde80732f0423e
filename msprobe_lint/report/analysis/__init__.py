"""What a dump says: where the overflow started, where it came in, and the
summary line (:mod:`.first`)."""
