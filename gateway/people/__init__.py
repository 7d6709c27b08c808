"""Who speaks and who hears: identities and links, conversations, memory and its scope, DM commands."""
