// Lab-only: rewrites one field of a member's label (both copies, valid
// crc32c) to craft the cases assembly must refuse, e.g. a member left behind
// at an older generation. Not installed.
//
//   fxblk-labeltool generation DEVICE [N]   print, or set to N
#include "label.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || std::string(argv[1]) != "generation") {
		std::cerr << "usage: fxblk-labeltool generation DEVICE [N]\n";
		return 2;
	}
	try {
		auto ml = fxctl::label::read_member(argv[2]);
		if (!ml.label) {
			std::cerr << argv[2] << ": no valid label (primary: " << ml.primary_reason
				  << "; backup: " << ml.backup_reason << ")\n";
			return 1;
		}
		if (argc == 3) {
			std::cout << ml.label->generation << '\n';
			return 0;
		}
		fxctl::label::Label l = *ml.label;
		l.generation = std::strtoull(argv[3], nullptr, 10);
		fxctl::label::write_member(argv[2], l);
	} catch (const std::exception &e) {
		std::cerr << argv[2] << ": " << e.what() << '\n';
		return 1;
	}
	return 0;
}
