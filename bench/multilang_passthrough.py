"""Pass-through bolt for bench.multilang, written with pystorm 3.1.4 as its users write one."""
from pystorm import Bolt


class PassThrough(Bolt):
    def process(self, tup):
        self.emit(tup.values)


if __name__ == "__main__":
    PassThrough().run()
