"""Simulated studies and players, clients of a running (or in-process) server: `simulate.py` (`exag
simulate`: whole studies played by simulated participants), `bot.py` (`exag bot`: players and the load test
through the real Socket.IO interface) and `power.py` (`exag simulate power`: power curves from many
simulated studies)."""
