"""The reporter: the downstream side that posts callbacks to the relay."""
