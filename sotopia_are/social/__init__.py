"""Social episodes on the event kernel: conversation, visibility, turn-taking, the runner."""
